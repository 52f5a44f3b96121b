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
}

// Client performs the token protocol against any number of connections.
// It is safe for concurrent use.
type Client struct {
	// filled in by NewClient
	http   *http.Client
	now    func() time.Time
	logger *slog.Logger

	mu         sync.Mutex           // guards discovered
	discovered map[string]Endpoints // discovery documents by issuer
	jwks       jwksCache            // fetched key sets by JWKS URL
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
	if err := checkConnURLs(conn); err != nil {
		return Endpoints{}, err
	}
	issuer := conn.IssuerURL()
	if issuer == "" { // only a TokenURL: nothing to discover
		return conn.KeycloakEndpoints(), nil
	}
	ep, err := c.discover(ctx, issuer)
	if err != nil {
		if conn.AuthURL == "" || KindOf(err) == KindTimeout {
			return Endpoints{}, err
		}
		c.logger.Debug("discovery failed; using Keycloak paths", "issuer", issuer, "kind", KindOf(err).String())
		return conn.KeycloakEndpoints(), nil
	}
	if conn.TokenURL != "" {
		ep.Token = conn.TokenURL
	}
	if ep.Token == "" {
		ep.Token = conn.KeycloakEndpoints().Token
	}
	if ep.Token == "" {
		return Endpoints{}, &Error{Kind: KindConfig, Op: "discovery", Msg: "the discovery document names no token endpoint", Hint: "set the token URL of the connection"}
	}
	return ep, nil
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
			return configError(u.name+" "+text.Safe(u.v)+" "+err.Error(), "use an https:// URL (http:// is allowed only for localhost)")
		}
	}
	return nil
}

// discover fetches and caches {issuer}/.well-known/openid-configuration.
func (c *Client) discover(ctx context.Context, issuer string) (Endpoints, error) {
	c.mu.Lock()
	ep, ok := c.discovered[issuer]
	c.mu.Unlock()
	if ok {
		return ep, nil
	}
	const op = "discovery"
	wellKnown := issuer + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, wellKnown, nil)
	if err != nil {
		return Endpoints{}, configError("issuer "+text.Safe(issuer)+" does not make a valid URL", "check the issuer")
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
		e.Msg = fmt.Sprintf("no discovery document at %s (status %d)", text.Safe(wellKnown), resp.StatusCode)
		e.Hint = "check the issuer URL"
		return Endpoints{}, e
	}
	var doc Endpoints
	if err := json.Unmarshal(body, &doc); err != nil {
		return Endpoints{}, &Error{Kind: KindMalformedResponse, Op: op, Msg: "the discovery document is not JSON", Hint: "check the issuer URL", Excerpt: scrub(string(body), nil)}
	}
	if doc.Token != "" {
		if err := CheckURL(doc.Token); err != nil {
			return Endpoints{}, &Error{Kind: KindConfig, Op: op, Msg: "the discovered token endpoint " + text.Safe(doc.Token) + " " + err.Error(), Hint: "set an https token URL on the connection"}
		}
	}
	for _, f := range []*string{&doc.JWKS, &doc.Logout, &doc.Userinfo, &doc.Introspection, &doc.Revocation} {
		if *f != "" && CheckURL(*f) != nil {
			c.logger.Debug("dropping a discovered endpoint that fails the URL check", "url", text.Safe(*f))
			*f = ""
		}
	}
	if doc.Issuer == "" {
		doc.Issuer = issuer
	}
	doc.Issuer = text.Safe(doc.Issuer)
	c.mu.Lock()
	c.discovered[issuer] = doc
	c.mu.Unlock()
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

// oauthConfig is the x/oauth2 configuration of conn with an explicit auth
// style (never the probing AuthStyleAutoDetect, which would send the secret
// twice).
func oauthConfig(conn Connection, clientSecret, tokenURL string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if conn.BasicAuth {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID:     conn.ClientID,
		ClientSecret: clientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: style},
		Scopes:       conn.Scopes,
	}
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
// when conn.Scopes is set). Client credentials go in the body unless
// conn.BasicAuth.
func (c *Client) Login(ctx context.Context, conn Connection, clientSecret, username, password string) (*TokenSet, error) {
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
	ctx, tr := withTracker(context.WithValue(ctx, oauth2.HTTPClient, c.http))
	tok, err := oauthConfig(conn, clientSecret, tokenURL).PasswordCredentialsToken(ctx, username, password)
	if err != nil {
		return nil, mapTokenError(ctx, op, tokenURL, err, tr, []string{password, clientSecret, username})
	}
	return c.tokenSet(tok), nil
}

// Refresh redeems prev.RefreshToken with grant_type=refresh_token and the
// client credentials. When the answer carries no refresh token, the old one
// and its expiry are kept. A refresh token that is expired, revoked or whose
// session ended yields KindLoginRequired.
func (c *Client) Refresh(ctx context.Context, conn Connection, clientSecret string, prev *TokenSet) (*TokenSet, error) {
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
	ctx, tr := withTracker(context.WithValue(ctx, oauth2.HTTPClient, c.http))
	expired := &oauth2.Token{RefreshToken: prev.RefreshToken, Expiry: time.Unix(1, 0)}
	tok, err := oauthConfig(conn, clientSecret, tokenURL).TokenSource(ctx, expired).Token()
	if err != nil {
		return nil, mapTokenError(ctx, op, tokenURL, err, tr, []string{clientSecret, prev.RefreshToken, prev.AccessToken})
	}
	ts := c.tokenSet(tok)
	if s, _ := tok.Extra("refresh_token").(string); s == "" {
		// No rotation: x/oauth2 kept the old refresh token; keep its expiry.
		ts.RefreshToken = prev.RefreshToken
		ts.RefreshExpiresIn = prev.RefreshExpiresIn
		ts.RefreshExpiresAt = prev.RefreshExpiresAt
	}
	if ts.Scope == "" {
		ts.Scope = prev.Scope // RFC 6749 §5.1: omitted when unchanged
	}
	if ts.SessionState == "" {
		ts.SessionState = prev.SessionState
	}
	return ts, nil
}

// tokenSet builds a TokenSet from a grant's answer, stamped with c.now().
func (c *Client) tokenSet(tok *oauth2.Token) *TokenSet {
	now := c.now()
	ts := &TokenSet{
		AccessToken:      tok.AccessToken,
		TokenType:        text.Safe(tok.TokenType),
		RefreshToken:     tok.RefreshToken,
		IDToken:          extraString(tok, "id_token"),
		ExpiresIn:        extraInt(tok, "expires_in"),
		RefreshExpiresIn: extraInt(tok, "refresh_expires_in"),
		NotBeforePolicy:  extraInt(tok, "not-before-policy"),
		SessionState:     text.Safe(extraString(tok, "session_state")),
		Scope:            text.Safe(extraString(tok, "scope")),
		ObtainedAt:       now,
	}
	if ts.ExpiresIn == 0 {
		ts.ExpiresIn = tok.ExpiresIn
	}
	if ts.ExpiresIn > 0 {
		ts.AccessExpiresAt = now.Add(time.Duration(ts.ExpiresIn) * time.Second)
	}
	if ts.RefreshExpiresIn > 0 && ts.RefreshToken != "" {
		ts.RefreshExpiresAt = now.Add(time.Duration(ts.RefreshExpiresIn) * time.Second)
	}
	ts.JWTExpiresAt = jwtExpiry(ts.AccessToken)
	return ts
}

// extraString reads a string field of the token response.
func extraString(tok *oauth2.Token, key string) string {
	s, _ := tok.Extra(key).(string)
	return s
}

// extraInt reads a numeric field of the token response, which JSON decodes
// as float64 and form bodies as int64 or string; anything else is 0.
func extraInt(tok *oauth2.Token, key string) int64 {
	return toInt(tok.Extra(key))
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

// postForm sends an authenticated form POST (client credentials in the body,
// or Basic when conn.BasicAuth) and returns the status and capped body.
func (c *Client) postForm(ctx context.Context, conn Connection, clientSecret, endpoint string, form url.Values) (int, []byte, error) {
	form = cloneValues(form)
	if !conn.BasicAuth {
		form.Set("client_id", conn.ClientID)
		form.Set("client_secret", clientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if conn.BasicAuth {
		req.SetBasicAuth(url.QueryEscape(conn.ClientID), url.QueryEscape(clientSecret))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	body, err := readBody(resp)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, body, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+2)
	for k, vv := range v {
		out[k] = append([]string(nil), vv...)
	}
	return out
}

// Logout ends the session at the realm's logout endpoint (form client_id,
// client_secret, refresh_token). A refusal is returned as *Error; callers drop
// their local tokens either way. A session that had already ended is
// KindLoginRequired.
func (c *Client) Logout(ctx context.Context, conn Connection, clientSecret, refreshToken string) error {
	const op = "logout"
	if err := conn.Validate(); err != nil {
		return withOp(err, op)
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return withOp(err, op)
	}
	if ep.Logout == "" {
		return &Error{Kind: KindConfig, Op: op, Msg: "the server offers no logout endpoint", Hint: "the session ends when the refresh token expires", Err: ErrNotSupported}
	}
	status, body, err := c.postForm(ctx, conn, clientSecret, ep.Logout, url.Values{"refresh_token": {refreshToken}})
	if err != nil {
		return mapTransportError(ctx, op, ep.Logout, err)
	}
	if status == http.StatusOK || status == http.StatusNoContent {
		return nil
	}
	se := parseServerError(body)
	return mapStatus(op, status, se.Code, se.Description, body, []string{clientSecret, refreshToken})
}

// Revoke revokes token by RFC 7009 where the server advertises a revocation
// endpoint; hint is "access_token" or "refresh_token". It returns
// ErrNotSupported when there is no such endpoint.
func (c *Client) Revoke(ctx context.Context, conn Connection, clientSecret, token, hint string) error {
	const op = "revoke"
	if err := conn.Validate(); err != nil {
		return withOp(err, op)
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return withOp(err, op)
	}
	if ep.Revocation == "" {
		return ErrNotSupported
	}
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	status, body, err := c.postForm(ctx, conn, clientSecret, ep.Revocation, form)
	if err != nil {
		return mapTransportError(ctx, op, ep.Revocation, err)
	}
	if status == http.StatusOK || status == http.StatusNoContent {
		return nil
	}
	se := parseServerError(body)
	return mapStatus(op, status, se.Code, se.Description, body, []string{clientSecret, token})
}

// LiveState is what the server says of a token that looks valid locally.
type LiveState int

const (
	LiveUnknown  LiveState = iota // cannot tell (no endpoint, network failure)
	LiveActive                    // the server accepts it
	LiveInactive                  // the server no longer accepts it (session ended)
)

func (s LiveState) String() string {
	return [...]string{"cannot tell", "active", "not active"}[s]
}

// Liveness is the answer of Client.Liveness.
type Liveness struct {
	State  LiveState
	Via    string // "introspection" or "userinfo"
	Reason string // sanitized, for LiveUnknown and LiveInactive
}

// Liveness asks the realm whether it still accepts accessToken: token
// introspection with the client's credentials, else userinfo (when
// introspection is missing or answers 401, 403 or 404). It never returns an
// error; failures are LiveUnknown with a reason.
func (c *Client) Liveness(ctx context.Context, conn Connection, clientSecret, accessToken string) Liveness {
	secrets := []string{clientSecret, accessToken}
	if err := conn.Validate(); err != nil {
		return Liveness{State: LiveUnknown, Reason: err.Error()}
	}
	ep, err := c.Endpoints(ctx, conn)
	if err != nil {
		return Liveness{State: LiveUnknown, Reason: err.Error()}
	}
	if ep.Introspection != "" {
		const via = "introspection"
		status, body, err := c.postForm(ctx, conn, clientSecret, ep.Introspection,
			url.Values{"token": {accessToken}, "token_type_hint": {"access_token"}})
		switch {
		case err != nil:
			return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "introspect", ep.Introspection, err).Error()}
		case status == http.StatusOK:
			var ans struct {
				Active *bool `json:"active"`
			}
			if json.Unmarshal(body, &ans) != nil || ans.Active == nil {
				return Liveness{State: LiveUnknown, Via: via, Reason: "the introspection answer is not valid JSON with \"active\""}
			}
			if *ans.Active {
				return Liveness{State: LiveActive, Via: via}
			}
			return Liveness{State: LiveInactive, Via: via, Reason: "the server no longer accepts the token (session ended or token revoked)"}
		case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
			c.logger.Debug("introspection unavailable; trying userinfo", "status", status)
		default:
			se := parseServerError(body)
			return Liveness{State: LiveUnknown, Via: via, Reason: mapStatus("introspect", status, se.Code, se.Description, body, secrets).Error()}
		}
	}
	if ep.Userinfo == "" {
		return Liveness{State: LiveUnknown, Reason: "the server offers neither token introspection nor userinfo"}
	}
	const via = "userinfo"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.Userinfo, nil)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: "the userinfo URL is not valid"}
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "userinfo", ep.Userinfo, err).Error()}
	}
	body, err := readBody(resp)
	if err != nil {
		return Liveness{State: LiveUnknown, Via: via, Reason: mapTransportError(ctx, "userinfo", ep.Userinfo, err).Error()}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return Liveness{State: LiveActive, Via: via}
	case http.StatusUnauthorized:
		reason := "the server no longer accepts the token"
		if se := parseServerError(body); se.Description != "" {
			reason += " (server said: " + scrub(se.Description, secrets) + ")"
		}
		return Liveness{State: LiveInactive, Via: via, Reason: reason}
	}
	se := parseServerError(body)
	return Liveness{State: LiveUnknown, Via: via, Reason: mapStatus("userinfo", resp.StatusCode, se.Code, se.Description, body, secrets).Error()}
}
