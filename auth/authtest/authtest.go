// Package authtest runs a Keycloak-compatible OAuth 2.0 server on loopback, in
// the spirit of net/http/httptest: for tests and for `shipkey demo`.
//
// It serves one realm under {URL}/auth/realms/{realm}/ with Keycloak's paths,
// status codes and JSON error bodies (see ../shared/notes/keycloak.md), signs
// access tokens RS256 with realistic Keycloak claims, issues HS512 JWT refresh
// tokens, and can be told to fail in every way a real server can. It never
// listens on anything but a loopback address, never logs a password, secret
// or token, and never imports other shipkey packages (auth's tests use it).
package authtest

import (
	"crypto/rsa"
	"time"
)

// User is a realm user.
type User struct {
	Username, Password         string
	Email, FirstName, LastName string
	EmailVerified              bool                // email_verified
	Disabled                   bool                // "Account disabled"
	RequiredActions            bool                // "Account is not fully set up"
	RealmRoles                 []string            // realm_access.roles
	ClientRoles                map[string][]string // resource_access.<client>.roles
	// ExternalSubject links the user to a subject of the realm's external
	// issuer (Keycloak: an identity provider link): a JWT bearer grant
	// with its assertion signs in as this user.
	ExternalSubject string
}

// Client is a registered client application.
type Client struct {
	ID, Secret          string // an empty Secret: a public client
	Disabled            bool   // invalid_client
	NoDirectAccessGrant bool   // password grant refused: unauthorized_client
	// ServiceAccount allows the client credentials grant (Keycloak:
	// "Service accounts roles"); off, it is refused with unauthorized_client.
	ServiceAccount bool
	// DeviceGrant allows the device authorization grant (Keycloak: "OAuth
	// 2.0 Device Authorization Grant").
	DeviceGrant bool
	// NoStandardFlow refuses the authorization code grant (Keycloak:
	// "Standard flow" off).
	NoStandardFlow bool
	// TokenBasicOnly accepts the client's secret at the token endpoint only
	// by HTTP Basic: a secret in the form there is invalid_client (a server
	// that registered the client as client_secret_basic, seen on the device
	// poll after the device request took the form).
	TokenBasicOnly bool
	// RedirectURIs are the exact redirect URIs allowed; none allows any
	// http loopback URI (RFC 8252 §7.3).
	RedirectURIs []string

	// AuthMethod is how the client authenticates (Keycloak: Credentials →
	// Client Authenticator), one of the Auth* constants; the zero value is
	// a client secret (Basic or form), or none for a public client.
	AuthMethod string
	// JWKS is the client's registered public key set (JSON), for
	// private_key_jwt and self_signed_tls_client_auth (Keycloak: Keys →
	// JWKS).
	JWKS string
	// CertSubject is the subject CN a tls_client_auth certificate must
	// have (Keycloak: "Subject DN"); empty means the client id.
	CertSubject string
	// DPoP requires DPoP-bound tokens (Keycloak: "Require DPoP bound
	// tokens"): a token request without a proof is refused.
	DPoP bool
	// RequirePAR refuses an authorization request that was not pushed
	// first (Keycloak: "Pushed authorization request required").
	RequirePAR bool
	// DevicePKCE requires PKCE (S256) on the device authorization request
	// (Keycloak: "Proof Key for Code Exchange Code Challenge Method", which
	// applies to the device grant too).
	DevicePKCE bool
	// JWTBearerGrant allows the JWT authorization grant (RFC 7523 §2.1)
	// with assertions of the realm's external issuer (Keycloak 26.5:
	// "JWT Authorization Grant" with the identity provider allowed).
	JWTBearerGrant bool
	// FederatedSubject is, for AuthMethod AuthFederatedJWT, the subject an
	// assertion of the realm's external issuer must have to authenticate
	// the client.
	FederatedSubject string
}

// Config describes the realm. Zero fields take Keycloak-like defaults.
type Config struct {
	Realm      string // default "master"
	Users      []User
	Clients    []Client
	AccessTTL  time.Duration // default 5m (the Shipping Service uses 1314000s)
	RefreshTTL time.Duration // default 30m; negative means no expiry (refresh_expires_in 0, offline-like)
	// RevokeRefreshToken turns on rotation with reuse detection: a refresh
	// token may be redeemed once; reusing it fails with "Maximum allowed
	// refresh token reuse exceeded" and ends the session.
	RevokeRefreshToken bool
	Scope              string           // granted scope, default "email profile"
	Now                func() time.Time // default time.Now
	// SigningKey signs access and ID tokens (RS256). Nil uses one 2048-bit
	// key generated once per process and shared by every Server, which keeps
	// tests fast; set it (or call Server.RotateKey) when a test needs tokens
	// that another server's JWKS must not verify.
	SigningKey *rsa.PrivateKey

	// The options below make the server behave as real servers other than
	// Keycloak do. Each is usable alone, the zero value of each keeps
	// Keycloak's behaviour, and the discovery document reflects them.
	// Profiles names useful sets of them.

	// ErrorBodies is how error answers look: ErrorBodiesJSON (Keycloak's
	// {"error":...,"error_description":...}), ErrorBodiesEmpty (status only)
	// or ErrorBodiesText (text/plain "Access denied" for 401 and 403, the
	// status text otherwise).
	ErrorBodies ErrorBodies
	// LowercaseTokenType answers token_type "bearer" instead of "Bearer".
	LowercaseTokenType bool
	// NoIntrospection removes token introspection (not in discovery, 404).
	NoIntrospection bool
	// UserinfoRequiresOpenID makes userinfo refuse (401 insufficient_scope)
	// an access token without the openid scope.
	UserinfoRequiresOpenID bool
	// NoTokenExchange is a realm without RFC 8693 token exchange (Keycloak
	// before 26.2, most servers): the grant is answered
	// unsupported_grant_type and discovery does not list it.
	NoTokenExchange bool
	// NoLogout removes the end-session (logout) endpoint: not in discovery,
	// 404 at Keycloak's path.
	NoLogout bool
	// RevocationPath serves RFC 7009 revocation at Issuer()+RevocationPath
	// (e.g. "/revoke") instead of Keycloak's path, which then answers 404;
	// discovery advertises it.
	RevocationPath string
	// NoRefreshRotation answers a refresh without a refresh_token: the client
	// keeps using the one it has (RFC 6749 §6 allows this).
	NoRefreshRotation bool
	// JWKSPath serves the key set at Issuer()+JWKSPath (e.g. "/jwks")
	// instead of Keycloak's .../protocol/openid-connect/certs, which then
	// answers 404; discovery's jwks_uri names it.
	JWKSPath string
	// DiscoveryBesideToken serves the discovery document beside the token
	// endpoint (…/protocol/openid-connect/.well-known/openid-configuration)
	// instead of at the issuer, which then answers 404.
	DiscoveryBesideToken bool
	// OpaqueRefreshTokens issues refresh tokens that are random strings, not
	// JWTs, without refresh_expires_in in the answer.
	OpaqueRefreshTokens bool
	// RequireScope refuses a password grant without a scope parameter
	// (400 invalid_request).
	RequireScope bool
	// DeviceInterval is the device grant's polling interval (whole seconds;
	// zero: Keycloak's 5 s). A poll sooner than it is answered slow_down,
	// which adds 5 s.
	DeviceInterval time.Duration
	// DPoPNonces makes the token and PAR endpoints require a server nonce
	// in DPoP proofs (RFC 9449 §8): a proof without the current one gets
	// use_dpop_nonce and a DPoP-Nonce header.
	DPoPNonces bool
	// MTLS also serves the realm on a TLS listener on 127.0.0.1 that asks
	// for client certificates (RFC 8705), with a certificate from the
	// server's CA (Server.CA); discovery's mtls_endpoint_aliases name it.
	MTLS bool
	// ExternalIssuer makes the realm trust an external issuer of its own
	// (Server.External, at URL()+"/ci"): its assertions are a JWT bearer
	// grant for the user linked to their subject and authenticate the
	// clients whose authenticator is AuthFederatedJWT.
	ExternalIssuer bool
}

// ErrorBodies is the shape of error answers (Config.ErrorBodies).
type ErrorBodies int

const (
	ErrorBodiesJSON  ErrorBodies = iota // Keycloak's JSON error body
	ErrorBodiesEmpty                    // no body
	ErrorBodiesText                     // text/plain, e.g. "Access denied"
)

// Profile is a named set of Config options that reproduce one real server's
// differences from Keycloak.
type Profile struct {
	Name  string
	Apply func(*Config)
}

// Profiles lists one profile per difference shipkey must cope with, each
// changing one thing (RotateRefresh and RequireScope included), for tests that
// run the same flows against every one of them.
func Profiles() []Profile {
	return []Profile{
		{"keycloak", func(*Config) {}},
		{"empty-error-bodies", func(c *Config) { c.ErrorBodies = ErrorBodiesEmpty }},
		{"text-error-bodies", func(c *Config) { c.ErrorBodies = ErrorBodiesText }},
		{"lowercase-bearer", func(c *Config) { c.LowercaseTokenType = true }},
		{"no-introspection-openid-userinfo", func(c *Config) { c.NoIntrospection, c.UserinfoRequiresOpenID = true, true }},
		{"revocation-only", func(c *Config) { c.NoLogout, c.RevocationPath = true, "/revoke" }},
		{"rotating-refresh", func(c *Config) { c.RevokeRefreshToken = true }},
		{"unrotated-refresh", func(c *Config) { c.NoRefreshRotation = true }},
		{"jwks-path", func(c *Config) { c.JWKSPath = "/jwks" }},
		{"discovery-beside-token", func(c *Config) { c.DiscoveryBesideToken, c.JWKSPath = true, "/jwks" }},
		{"opaque-refresh", func(c *Config) { c.OpaqueRefreshTokens = true }},
		{"scope-required", func(c *Config) { c.RequireScope = true }},
	}
}

// Fault makes the next Times requests to an endpoint misbehave.
type Fault struct {
	Endpoint  string        // "token", "certs", "logout", "userinfo", "introspect", "revoke", "discovery"
	Times     int           // how many requests it applies to (0 means 1)
	Status    int           // answer with this status and Body
	Body      string        //
	Delay     time.Duration // wait before answering (bounded by the request's context)
	Malformed bool          // 200 with a body that is not JSON
	Huge      bool          // 200 with a body over 2 MiB
	Drop      bool          // close the connection without an answer
}

// Demo credentials served by DemoConfig.
const (
	DemoRealm        = "master"
	DemoClientID     = "shipping-api"
	DemoClientSecret = "demo-client-secret"
	// DemoPublicClientID is a public client (no secret) for the browser
	// and device grants.
	DemoPublicClientID = "shipping-cli"
	// DemoDPoPClientID requires DPoP-bound tokens (secret DemoClientSecret);
	// DemoJWTClientID authenticates with client_secret_jwt over
	// DemoJWTSecret.
	DemoDPoPClientID = "shipping-dpop"
	DemoJWTClientID  = "shipping-jwt"
	DemoJWTSecret    = "demo-client-secret-for-signed-jwts-0123"
	DemoUsername     = "demo"
	DemoPassword     = "demo-password"
)
