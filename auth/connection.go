package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// DefaultRealm is the realm used when a Connection names none (the spec's path
// uses "master").
const DefaultRealm = "master"

// Connection says where a realm is and which client speaks to it. The token
// URL is {AuthURL}/auth/realms/{Realm}/protocol/openid-connect/token unless
// TokenURL overrides it, or Issuer is set and OIDC discovery names it.
type Connection struct {
	AuthURL  string   `toml:"auth_url" json:"auth_url"`
	Realm    string   `toml:"realm,omitempty" json:"realm,omitempty"`
	ClientID string   `toml:"client_id" json:"client_id"`
	TokenURL string   `toml:"token_url,omitempty" json:"token_url,omitempty"`
	Issuer   string   `toml:"issuer,omitempty" json:"issuer,omitempty"`
	Scopes   []string `toml:"scopes,omitempty" json:"scopes,omitempty"`
	// ClientAuth is how the client authenticates (RFC 8414 names); empty:
	// as BasicAuth and PublicClient say (AuthMethod).
	ClientAuth ClientAuthMethod `toml:"client_auth,omitempty" json:"client_auth,omitempty"`
	// BasicAuth and PublicClient are how keys written before ClientAuth
	// said client_secret_basic and none; they are read, and new keys write
	// ClientAuth instead.
	BasicAuth    bool `toml:"basic_auth,omitempty" json:"basic_auth,omitempty"`
	PublicClient bool `toml:"public_client,omitempty" json:"public_client,omitempty"`
	// ClientKeyID is the kid of the client's assertions (private_key_jwt);
	// empty: the key's RFC 7638 thumbprint.
	ClientKeyID string `toml:"client_key_id,omitempty" json:"client_key_id,omitempty"`
	// DPoP binds the key's tokens to a DPoP key of its own (RFC 9449),
	// kept with its secrets.
	DPoP bool `toml:"dpop,omitempty" json:"dpop,omitempty"`
	// NoPAR: the authorization code grant does not push its request even
	// when the realm has a PAR endpoint (--par=false).
	NoPAR bool `toml:"no_par,omitempty" json:"no_par,omitempty"`
}

// AuthMethod is the connection's client authentication: ClientAuth when
// set, else none for a public client, client_secret_basic for BasicAuth,
// and "" (not chosen: the form body, Basic tried on invalid_client) for
// every other key written before ClientAuth existed.
func (c Connection) AuthMethod() ClientAuthMethod {
	switch {
	case c.ClientAuth != "":
		return c.ClientAuth
	case c.PublicClient:
		return ClientAuthNone
	case c.BasicAuth:
		return ClientSecretBasic
	}
	return ""
}

// IsPublic reports a client without a secret or other credentials.
func (c Connection) IsPublic() bool { return c.AuthMethod().Needs().Public }

// RealmName returns the realm, or DefaultRealm when none is set.
func (c Connection) RealmName() string {
	if c.Realm == "" {
		return DefaultRealm
	}
	return c.Realm
}

// RealmURL is Keycloak's base URL of the realm: {auth_url}/auth/realms/{realm}.
// It is empty when the connection has no AuthURL.
func (c Connection) RealmURL() string {
	if c.AuthURL == "" {
		return ""
	}
	return strings.TrimRight(c.AuthURL, "/") + "/auth/realms/" + url.PathEscape(c.RealmName())
}

// IssuerURL is the issuer the realm's tokens carry in "iss": Issuer when set,
// else the Keycloak realm URL.
func (c Connection) IssuerURL() string {
	if c.Issuer != "" {
		return strings.TrimRight(c.Issuer, "/")
	}
	return c.RealmURL()
}

// KeycloakEndpoints returns the realm's endpoints at Keycloak's fixed paths,
// with TokenURL applied when set. Discovery (Client.Endpoints) is preferred
// where the server offers it.
func (c Connection) KeycloakEndpoints() Endpoints {
	base := c.RealmURL()
	e := Endpoints{Issuer: c.IssuerURL()}
	if base != "" {
		oidc := base + "/protocol/openid-connect"
		e.Token = oidc + "/token"
		e.JWKS = oidc + "/certs"
		e.Logout = oidc + "/logout"
		e.Userinfo = oidc + "/userinfo"
		e.Introspection = oidc + "/token/introspect"
		e.Revocation = oidc + "/revoke"
		e.Authorization = oidc + "/auth"
		e.DeviceAuthorization = oidc + "/auth/device"
	}
	if c.TokenURL != "" {
		e.Token = c.TokenURL
	}
	return e
}

// Validate checks the shape of the connection before anything is sent: a
// client id, an auth URL (or token URL or issuer), absolute http(s) URLs, and
// plain http only for loopback hosts. Its errors are *Error of KindConfig.
func (c Connection) Validate() error {
	if strings.TrimSpace(c.ClientID) == "" {
		return configError("client id is empty", "pass --client-id (the client registered in the realm)")
	}
	if c.AuthURL == "" && c.TokenURL == "" && c.Issuer == "" {
		return configError("no auth URL", "pass --auth-url (for example https://auth.example.com)")
	}
	for _, u := range []struct{ name, v string }{{"auth URL", c.AuthURL}, {"token URL", c.TokenURL}, {"issuer", c.Issuer}} {
		if u.v == "" {
			continue
		}
		if err := CheckURL(u.v); err != nil {
			return configError(fmt.Sprintf("%s %s", u.name, err.Error()), "use an https:// URL (http:// is allowed only for localhost)")
		}
		if err := checkNoQuery(u.name, u.v); err != nil {
			return err
		}
	}
	if c.AuthURL != "" {
		if n, err := c.Normalize(); err != nil {
			return err
		} else if strings.TrimRight(n.AuthURL, "/") != strings.TrimRight(c.AuthURL, "/") {
			return configError("the auth URL "+c.AuthURL+" holds a realm path", "run it through Normalize, or set "+describe(n))
		}
	}
	return nil
}

// describe says, for a message, which URL and realm n sets.
func describe(n Connection) string {
	if n.AuthURL != "" {
		return "the auth URL to " + n.AuthURL + " and the realm to " + n.Realm
	}
	return "the issuer to " + n.Issuer + " (and no auth URL)"
}

// checkNoQuery refuses a connection URL with a query or a fragment: the auth
// URL is a base that paths are appended to, and a token URL or issuer with
// one would send credentials somewhere else than meant.
func checkNoQuery(name, raw string) error {
	i := strings.IndexAny(raw, "?#")
	if i < 0 {
		return nil
	}
	what := "a query"
	if raw[i] == '#' {
		what = "a fragment"
	}
	return configError(fmt.Sprintf("the %s has %s (%s)", name, what, raw[i:]),
		fmt.Sprintf("remove %q and everything after it: use %s", raw[i:i+1], raw[:i]))
}

// Normalize recognises a realm path pasted into AuthURL and splits it:
//
//   - https://h/auth/realms/NAME (Keycloak before 17, and later ones run with
//     --http-relative-path=/auth, the spec's shape) becomes AuthURL
//     https://h and Realm NAME; anything before /auth stays in AuthURL
//     (https://h/kc/auth/realms/NAME gives https://h/kc);
//   - https://h/realms/NAME (Keycloak 17 and later, without /auth) cannot be
//     an AuthURL: shipkey always puts /auth/realms/ after the auth URL, as the
//     spec's token path does. It becomes Issuer https://h/realms/NAME with
//     Realm NAME and no AuthURL, so that every endpoint comes from OIDC
//     discovery at that issuer;
//
// each with or without a trailing /, /protocol/openid-connect/... or
// /.well-known/openid-configuration. A pasted realm that contradicts a Realm
// already set is an error (KindConfig); so is a /realms/ path when an Issuer
// is already set to something else. Any other connection is returned
// unchanged (trailing slashes of AuthURL trimmed).
func (c Connection) Normalize() (Connection, error) {
	if c.AuthURL == "" {
		return c, nil
	}
	u, err := url.Parse(c.AuthURL)
	if err != nil || u.Host == "" || strings.ContainsAny(c.AuthURL, "?#") {
		return c, nil // Validate says what is wrong
	}
	prefix, rawRealm, ok := realmPath(u)
	if !ok {
		c.AuthURL = strings.TrimRight(c.AuthURL, "/")
		return c, nil
	}
	realm, err := url.PathUnescape(rawRealm)
	if err != nil || realm == "" || strings.Contains(rawRealm, "/") {
		return c, configError("the auth URL "+c.AuthURL+" has a realm path that shipkey cannot read",
			"set the auth URL to the server's base URL (https://host) and the realm separately")
	}
	if c.Realm != "" && c.Realm != realm {
		return c, configError(fmt.Sprintf("the auth URL names realm %s but the realm is set to %s", realm, c.Realm),
			"drop the realm path from the auth URL, or set the realm to the one you mean")
	}
	c.Realm = realm
	return c.atRealm(u.Scheme+"://"+u.Host, prefix, rawRealm)
}

// realmPath splits u's path (without a trailing /, /protocol/openid-connect/...
// or /.well-known/openid-configuration) at its last /realms/: what comes
// before it and the realm, still escaped; false when there is none.
func realmPath(u *url.URL) (prefix, rawRealm string, ok bool) {
	path := strings.TrimRight(u.EscapedPath(), "/")
	for _, suffix := range []string{"/.well-known/openid-configuration", "/protocol/openid-connect"} {
		if i := strings.Index(path, suffix); i >= 0 {
			path = path[:i]
		}
	}
	i := strings.LastIndex(path, "/realms/")
	if i < 0 {
		return "", "", false
	}
	return path[:i], path[i+len("/realms/"):], true
}

// atRealm is c with the realm URL base+prefix+/realms/rawRealm read: the
// auth URL before /auth/realms/, or (Keycloak 17 and later, without /auth)
// the issuer, which must not contradict one already set.
func (c Connection) atRealm(base, prefix, rawRealm string) (Connection, error) {
	if p, ok := strings.CutSuffix(prefix, "/auth"); ok {
		c.AuthURL = base + p
		return c, nil
	}
	issuer := base + prefix + "/realms/" + rawRealm
	if c.Issuer != "" && strings.TrimRight(c.Issuer, "/") != issuer {
		return c, configError("the auth URL "+c.AuthURL+" names another realm than the issuer "+c.Issuer,
			"set only the issuer")
	}
	c.AuthURL, c.Issuer = "", issuer
	return c, nil
}

// CheckURL reports whether raw is an absolute http(s) URL that shipkey may
// send credentials to: https anywhere, http only to a loopback host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return errors.New("is not an absolute http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry a user name or password")
	}
	if u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		return errors.New("uses plain http to a host that is not loopback")
	}
	return nil
}

// IsLoopback reports whether host is localhost or a loopback IP address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Endpoints are a realm's URLs. An empty field means the server offers no such
// endpoint.
type Endpoints struct {
	Issuer        string `json:"issuer"`
	Token         string `json:"token_endpoint"`
	JWKS          string `json:"jwks_uri"`
	Logout        string `json:"end_session_endpoint"`
	Userinfo      string `json:"userinfo_endpoint"`
	Introspection string `json:"introspection_endpoint"`
	Revocation    string `json:"revocation_endpoint"`
	// Authorization and DeviceAuthorization are where the browser and
	// device grants start (Keycloak: .../auth and .../auth/device).
	Authorization       string `json:"authorization_endpoint"`
	DeviceAuthorization string `json:"device_authorization_endpoint"`
	// IssParameter: the server sends iss with its authorization responses
	// (RFC 9207), so a response without it is refused.
	IssParameter bool `json:"authorization_response_iss_parameter_supported"`
	// PAR is the pushed authorization request endpoint (RFC 9126): when
	// the server has one, the authorization code grant pushes its request.
	PAR string `json:"pushed_authorization_request_endpoint"`
	// ScopesSupported is discovery's scopes_supported: the interactive
	// grants ask for openid when no scope is set and it is listed here.
	ScopesSupported ScopeList `json:"scopes_supported,omitempty"`
}

// ScopeList is a discovery document's list of scopes, kept as one
// space-separated string so that Endpoints stays comparable.
type ScopeList string

// UnmarshalJSON reads a JSON array of strings; anything else is no list.
func (l *ScopeList) UnmarshalJSON(b []byte) error {
	var v []string
	if json.Unmarshal(b, &v) != nil {
		*l = ""
		return nil
	}
	*l = ScopeList(strings.Join(v, " "))
	return nil
}

// Has reports whether the list names scope.
func (l ScopeList) Has(scope string) bool { return slices.Contains(strings.Fields(string(l)), scope) }
