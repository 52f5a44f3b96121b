package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/oauth2"
)

// MaxBodySize caps every response body auth reads.
const MaxBodySize = 1 << 20

// Options configure a Client. The zero value is usable.
type Options struct {
	// HTTPClient replaces the transport auth builds (tests). When nil, auth
	// builds one with the timeouts below, TLS verification on, CAFile added to
	// the system roots, HTTPS_PROXY/NO_PROXY honoured, and redirects refused.
	// Either way auth wraps its transport: bodies are capped at MaxBodySize,
	// plain http to a non-loopback host is refused before sending, and a
	// client without CheckRedirect gets one that refuses redirects.
	HTTPClient *http.Client
	// CAFile is a PEM bundle of extra roots for private CAs.
	CAFile string
	// DialTimeout bounds connecting (default 10 s); Timeout bounds a whole
	// request including the body (default 30 s).
	DialTimeout time.Duration
	Timeout     time.Duration
	// Now is the clock for ObtainedAt and expiries (default time.Now).
	Now func() time.Time
	// Logger receives debug lines; secrets never reach it. Nil discards.
	Logger *slog.Logger
	// Waiting, when set, is called as each request goes out; the function
	// it returns is called when the answer's headers arrive or the request
	// fails. The CLI uses it to say that it is waiting for the server.
	Waiting func() (done func())
}

// Client performs the token protocol against any number of connections.
// It is safe for concurrent use.
type Client struct {
	// filled in by NewClient
	http   *http.Client
	now    func() time.Time
	logger *slog.Logger

	mu         sync.Mutex                  // guards discovered and learned
	discovered map[string]Endpoints        // discovery documents by issuer
	learned    map[string]ClientAuthMethod // client authentication found to work, by learnKey
	jwks       jwksCache                   // fetched key sets by JWKS URL
	certHTTP   map[string]*http.Client     // clients presenting a certificate, by its thumbprint
	hardening  map[string]hardening        // discovery's switches of hardened realms, by issuer
	nonces     DPoPNonces                  // the DPoP nonces servers asked for
}

// NewClient builds a Client. It fails only when CAFile cannot be read.
func NewClient(opts Options) (*Client, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hc, err := buildHTTPClient(opts, logger)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Client{http: hc, now: now, logger: logger, discovered: map[string]Endpoints{}}, nil
}

// Now is the client's clock.
func (c *Client) Now() time.Time { return c.now() }

// Endpoints resolves the connection's endpoints: from OIDC discovery
// ({issuer}/.well-known/openid-configuration, where issuer is Issuer or the
// Keycloak realm URL) when the server offers it, else Keycloak's fixed paths;
// TokenURL always wins for the token endpoint. Results are cached per issuer.
//
// A failed discovery falls back to Keycloak's paths when the connection has an
// AuthURL; with only Issuer set it is an error. Every endpoint is checked with
// CheckURL: a discovered token endpoint that fails the check is an error of
// KindConfig, any other such endpoint is dropped (left empty).
func (c *Client) Endpoints(ctx context.Context, conn Connection) (Endpoints, error) {
	ep, _, err := c.endpoints(ctx, conn)
	return ep, err
}

// endpoints is Endpoints, also reporting whether discovery answered (false:
// Keycloak's fixed paths are guesses).
func (c *Client) endpoints(ctx context.Context, conn Connection) (Endpoints, bool, error) {
	if err := checkConnURLs(conn); err != nil {
		return Endpoints{}, false, err
	}
	issuer := conn.IssuerURL()
	if issuer == "" { // only a TokenURL: nothing to discover
		return conn.KeycloakEndpoints(), false, nil
	}
	ep, _, err := c.discoverAny(ctx, conn)
	if err != nil {
		if conn.AuthURL == "" || KindOf(err) == KindTimeout {
			return Endpoints{}, false, err
		}
		c.logger.Debug("discovery failed; using Keycloak paths", "issuer", issuer, "kind", KindOf(err).String())
		return conn.KeycloakEndpoints(), false, nil
	}
	if conn.TokenURL != "" {
		ep.Token = conn.TokenURL
	}
	if ep.Token == "" {
		ep.Token = conn.KeycloakEndpoints().Token
	}
	if ep.Token == "" {
		return Endpoints{}, false, &Error{Kind: KindConfig, Op: "discovery", Msg: "the discovery document names no token endpoint", Hint: "set the token URL of the connection"}
	}
	return ep, true, nil
}

// checkConnURLs applies CheckURL to the connection's URLs (KindConfig).
func checkConnURLs(conn Connection) error {
	if conn.AuthURL == "" && conn.TokenURL == "" && conn.Issuer == "" {
		return configError("no auth URL", "pass --auth-url (for example https://auth.example.com)")
	}
	for _, u := range []struct{ name, v string }{{"auth URL", conn.AuthURL}, {"token URL", conn.TokenURL}, {"issuer", conn.Issuer}} {
		if u.v == "" {
			continue
		}
		if err := CheckURL(u.v); err != nil {
			return configError(u.name+" "+u.v+" "+err.Error(), "use an https:// URL (http:// is allowed only for localhost)")
		}
		if err := checkNoQuery(u.name, u.v); err != nil {
			return err
		}
	}
	return nil
}

// discoveryURLs are where conn's discovery document may be: at the issuer
// ({issuer}/.well-known/openid-configuration, the standard place) and, for
// servers that publish it there, beside the token endpoint
// (…/protocol/openid-connect/.well-known/openid-configuration).
func discoveryURLs(conn Connection) []string {
	const wk = "/.well-known/openid-configuration"
	var urls []string
	if issuer := conn.IssuerURL(); issuer != "" {
		urls = append(urls, issuer+wk)
	}
	tok := conn.TokenURL
	if tok == "" {
		tok = conn.KeycloakEndpoints().Token
	}
	if i := strings.LastIndexByte(tok, '/'); i > len("https://") {
		if u := tok[:i] + wk; !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// discoverAny tries conn's discoveryURLs in order and returns the first
// document that answers, cached by issuer. On failure, tried says what was
// asked and what each answered; err is the first failure (a timeout ends the
// search: the server is not answering at all).
func (c *Client) discoverAny(ctx context.Context, conn Connection) (ep Endpoints, tried []string, err error) {
	issuer := conn.IssuerURL()
	c.mu.Lock()
	ep, ok := c.discovered[issuer]
	c.mu.Unlock()
	if ok {
		return ep, nil, nil
	}
	var first error
	for _, u := range discoveryURLs(conn) {
		ep, err := c.discover(ctx, issuer, u)
		if err == nil {
			c.mu.Lock()
			c.discovered[issuer] = ep
			c.mu.Unlock()
			return ep, nil, nil
		}
		tried = append(tried, triedLine(u, err))
		if first == nil {
			first = err
		}
		if KindOf(err) == KindTimeout {
			break
		}
	}
	if first == nil {
		first = configError("no issuer and no token URL to discover the realm from", "set the connection's issuer or auth URL")
	}
	return Endpoints{}, tried, first
}

// triedLine is "URL (what it answered)", for messages naming what was tried.
func triedLine(u string, err error) string {
	why := "no answer"
	var e *Error
	switch {
	case errors.As(err, &e) && e.Status != 0:
		why = fmt.Sprintf("HTTP %d", e.Status)
	case KindOf(err) == KindTimeout:
		why = "no answer in time"
	case KindOf(err) == KindMalformedResponse:
		why = "not a discovery document"
	}
	return text.Cleanf("%s (%s)", u, why).String()
}

// discover fetches the discovery document at wellKnown for issuer.
func (c *Client) discover(ctx context.Context, issuer, wellKnown string) (Endpoints, error) {
	const op = "discovery"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, wellKnown, nil)
	if err != nil {
		return Endpoints{}, configError("issuer "+issuer+" does not make a valid URL", "check the issuer")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Endpoints{}, mapTransportError(ctx, op, wellKnown, err)
	}
	body, err := readBody(resp)
	if err != nil {
		return Endpoints{}, mapTransportError(ctx, op, wellKnown, err)
	}
	if resp.StatusCode != http.StatusOK {
		se := parseServerError(body)
		e := mapStatus(op, resp.StatusCode, se.Code, se.Description, body, nil)
		e.Kind = KindServer
		e.Msg = fmt.Sprintf("no discovery document at %s (status %d)", wellKnown, resp.StatusCode)
		e.Hint = "check the issuer URL"
		return Endpoints{}, e
	}
	var doc Endpoints
	if err := json.Unmarshal(body, &doc); err != nil {
		return Endpoints{}, &Error{Kind: KindMalformedResponse, Op: op, Msg: "the discovery document is not JSON", Hint: "check the issuer URL", Excerpt: bodyExcerpt(body, nil)}
	}
	if doc.Token != "" {
		if err := CheckURL(doc.Token); err != nil {
			return Endpoints{}, &Error{Kind: KindConfig, Op: op, Msg: "the discovered token endpoint " + doc.Token + " " + err.Error(), Hint: "set an https token URL on the connection"}
		}
	}
	for _, f := range []*string{&doc.JWKS, &doc.Logout, &doc.Userinfo, &doc.Introspection, &doc.Revocation, &doc.Authorization, &doc.DeviceAuthorization, &doc.PAR} {
		if *f != "" && CheckURL(*f) != nil {
			c.logger.Debug("dropping a discovered endpoint that fails the URL check", "url", text.Safe(*f))
			*f = ""
		}
	}
	if doc.Issuer == "" {
		doc.Issuer = issuer
	}
	doc.Issuer = text.Safe(doc.Issuer)
	c.keepHardening(issuer, body)
	return doc, nil
}

// tokenEndpoint is the token URL for the grants: TokenURL, else Keycloak's
// fixed path when no Issuer is set (no round trip), else discovery.
func (c *Client) tokenEndpoint(ctx context.Context, conn Connection) (string, error) {
	if err := checkConnURLs(conn); err != nil {
		return "", err
	}
	if conn.TokenURL != "" {
		return conn.TokenURL, nil
	}
	if conn.Issuer == "" {
		return conn.KeycloakEndpoints().Token, nil
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return "", err
	}
	return ep.Token, nil
}

// withOp sets the Op of an *Error built before the operation started.
func withOp(err error, op string) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		e.Op = op
	}
	return err
}

// Login runs the password grant exactly as the spec: a form POST with
// client_id, client_secret, grant_type=password, username, password (and scope
// when conn.Scopes is set), with the client authentication ca applies.
func (c *Client) Login(ctx context.Context, conn Connection, ca ClientAuth, username, password string) (*TokenSet, error) {
	const op = "login"
	if err := conn.Validate(); err != nil {
		return nil, withOp(err, op)
	}
	if username == "" {
		return nil, &Error{Kind: KindInvalidCredentials, Op: op, Msg: "the username is empty", Hint: "pass the username of a user registered for the client"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	form := url.Values{"grant_type": {"password"}, "username": {username}, "password": {password}}
	setScope(form, conn.Scopes)
	return c.token(ctx, conn, ca, tokenCall{Op: op, Endpoint: tokenURL, Form: form, Secrets: []string{password, username}})
}

// setScope sets the scope parameter when scopes are given.
func setScope(form url.Values, scopes []string) {
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
}

// Refresh redeems prev.RefreshToken with grant_type=refresh_token and the
// client authentication ca. When the answer carries no refresh token, the old
// one and its expiry are kept. A refresh token that is expired, revoked or
// whose session ended yields KindLoginRequired.
func (c *Client) Refresh(ctx context.Context, conn Connection, ca ClientAuth, prev *TokenSet) (*TokenSet, error) {
	const op = "refresh"
	if err := conn.Validate(); err != nil {
		return nil, withOp(err, op)
	}
	if prev == nil || prev.RefreshToken == "" {
		return nil, &Error{Kind: KindLoginRequired, Op: op, Msg: "there is no refresh token", Hint: "log in again with `shipkey login`"}
	}
	tokenURL, err := c.tokenEndpoint(ctx, conn)
	if err != nil {
		return nil, withOp(err, op)
	}
	ts, err := c.token(ctx, conn, ca, tokenCall{Op: op, Endpoint: tokenURL,
		Form:    url.Values{"grant_type": {"refresh_token"}, "refresh_token": {prev.RefreshToken}},
		Secrets: []string{prev.RefreshToken, prev.AccessToken}})
	if err != nil {
		return nil, err
	}
	if ts.RefreshToken == "" {
		// No rotation: the old refresh token stays, with its expiry.
		ts.RefreshToken = prev.RefreshToken
		ts.RefreshExpiresIn = prev.RefreshExpiresIn
		ts.RefreshExpiresAt = prev.RefreshExpiresAt
		ts.RefreshExpirySource = prev.RefreshExpirySource
	}
	if ts.Scope == "" {
		ts.Scope = prev.Scope // RFC 6749 §5.1: omitted when unchanged
	}
	if ts.SessionState == "" {
		ts.SessionState = prev.SessionState
	}
	return ts, nil
}

// extraString reads a string field of the token response.
func extraString(tok *oauth2.Token, key string) string {
	s, _ := tok.Extra(key).(string)
	return s
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case float64:
		if n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n)
		}
	case int64:
		return n
	case int:
		return int64(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i
		}
		if f, err := n.Float64(); err == nil {
			return toInt(f)
		}
	case string:
		s := strings.TrimSpace(n)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return toInt(f)
		}
	}
	return 0
}

// jwtExpiry reads the exp claim of a JWT without verifying it; zero when token
// is not a JWT or has no numeric exp.
func jwtExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var payload struct {
		Exp json.Number `json:"exp"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&payload) != nil {
		return time.Time{}
	}
	exp := toInt(payload.Exp)
	if exp <= 0 {
		return time.Time{}
	}
	return time.Unix(exp, 0)
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+2)
	for k, vv := range v {
		out[k] = append([]string(nil), vv...)
	}
	return out
}
