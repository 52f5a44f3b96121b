package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/internal/text"
)

// JWKSCacheTTL is how long Verify reuses a realm's keys before fetching them
// again. A token whose kid is not among the cached keys triggers one early
// fetch (the realm may have rotated its keys).
const JWKSCacheTTL = 5 * time.Minute

// verifyAlgs are the asymmetric algorithms Verify accepts. HS* is refused
// before parsing (a client never holds the realm's secret) and "none" is
// never accepted.
var verifyAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA,
}

// foreignKeysHint is how to check a token of an issuer no connection names:
// against that issuer's key set, given by the person (never fetched from a
// URL the token names).
const foreignKeysHint = "to check it, pass the issuer's key set with --jwks URL or --jwks FILE"

// precheck decodes token for a signature check: done is set when the
// verdict is known without keys (undecodable, opaque, HMAC-signed).
func (c *Client) precheck(token string) (d *Decoded, v Verification, done bool) {
	d, err := Decode(token, c.clock())
	switch {
	case err != nil:
		return nil, Verification{State: SigFailed, Reason: text.Sanitize(err.Error())}, true
	case d.Format == FormatOpaque:
		return nil, Verification{State: SigNotChecked, Reason: text.Trusted("not a JWT: an opaque token has no signature to check")}, true
	case d.Format == FormatJWE:
		return nil, Verification{State: SigNotChecked, Reason: text.Trusted("an encrypted token (JWE): only its recipient can read and check it")}, true
	}
	v = Verification{KeyID: text.Sanitize(d.Kid), Issuer: text.Sanitize(d.Issuer)}
	if d.SymmetricSigned {
		// HS* is an HMAC with a secret only the server knows (Keycloak signs its
		// refresh tokens so): say what is known, no more.
		v.Reason = text.Cleanf("HMAC-signed (%s): a client cannot check it", d.Alg)
		return d, v, true
	}
	return d, v, false
}

func (c *Client) verify(ctx context.Context, conns []Connection, token string) Verification {
	d, v, done := c.precheck(token)
	if done {
		return v
	}
	iss, _ := d.Raw["iss"].(string)
	if iss == "" {
		v.Reason = text.Trusted("the token names no issuer; not fetching any keys")
		return v
	}
	conn, ok := matchIssuer(conns, iss)
	if !ok {
		v.Reason = text.Cleanf("issuer %s is not one of your connections; not fetching its keys; "+foreignKeysHint, iss)
		return v
	}
	jwksURL, tried, err := c.keysURL(ctx, conn)
	if err != nil {
		v.Reason = text.Sanitize("cannot find the realm's keys: " + err.Error() + triedSuffix(tried))
		v.KeysUnavailable = true
		return v
	}
	state, reason := c.verifyWithJWKS(ctx, jwksURL, text.BearerToken(token))
	if state == SigNotChecked {
		reason = text.Concat(reason, text.Sanitize(triedSuffix(tried)))
		v.KeysUnavailable = true
	}
	v.State, v.Reason = state, reason
	return v
}

// keysURL is where conn's realm publishes its signing keys: the jwks_uri of
// whichever discovery document answered (at the issuer, else beside the
// token endpoint), else Keycloak's fixed certs path. tried names the
// discovery documents that did not answer, for the message when the keys
// cannot be fetched either.
func (c *Client) keysURL(ctx context.Context, conn Connection) (string, []string, error) {
	if err := checkConnURLs(conn); err != nil {
		return "", nil, err
	}
	ep, tried, err := c.discoverAny(ctx, conn)
	switch {
	case err == nil && ep.JWKS == "":
		return "", nil, errors.New("the realm's discovery document names no jwks_uri")
	case err == nil:
		return ep.JWKS, nil, nil
	case conn.AuthURL == "" || KindOf(err) == KindTimeout:
		return "", tried, err
	}
	u := conn.KeycloakEndpoints().JWKS
	if err := CheckURL(u); err != nil {
		return "", tried, errors.New("the realm's JWKS URL " + err.Error())
	}
	return u, tried, nil
}

// triedSuffix is "; discovery tried at A (HTTP 404), B (HTTP 404)", or "".
func triedSuffix(tried []string) string {
	if len(tried) == 0 {
		return ""
	}
	return "; discovery tried at " + strings.Join(tried, ", ")
}

// matchIssuer finds the connection whose issuer is exactly iss: its
// IssuerURL, or its Issuer as configured (which may keep a trailing slash).
func matchIssuer(conns []Connection, iss string) (Connection, bool) {
	for _, conn := range conns {
		if u := conn.IssuerURL(); u != "" && u == iss {
			return conn, true
		}
		if conn.Issuer != "" && conn.Issuer == iss {
			return conn, true
		}
	}
	return Connection{}, false
}

// verifyWithJWKS checks a compact JWS against the key set served at jwksURL
// (a URL from the connection, never from the token). Fetch failures are
// SigNotChecked; a mismatch is SigFailed.
func (c *Client) verifyWithJWKS(ctx context.Context, jwksURL, token string) (SigState, text.Clean) {
	jws, alg, kid, reason := parseJWS(token)
	if jws == nil {
		return SigFailed, reason
	}
	cache := &c.jwks
	keys, fresh, err := cache.get(ctx, c, jwksURL, false)
	if err != nil {
		return SigNotChecked, text.Sanitize("cannot fetch the realm's keys: " + err.Error())
	}
	candidates := signingKeys(keys, kid, alg)
	if len(candidates) == 0 && !fresh {
		if keys, _, err = cache.get(ctx, c, jwksURL, true); err != nil {
			return SigNotChecked, text.Sanitize("cannot fetch the realm's keys: " + err.Error())
		}
		candidates = signingKeys(keys, kid, alg)
	}
	if len(candidates) == 0 {
		if kid == "" {
			return SigFailed, text.Cleanf("the token names no kid and no %s key in the realm's JWKS fits", alg)
		}
		return SigFailed, text.Cleanf("no key with kid %s in the realm's JWKS", kid)
	}
	for _, k := range candidates {
		if _, err := jws.Verify(k.Key); err == nil {
			return SigVerified, text.Clean{}
		}
	}
	if kid == "" {
		return SigFailed, text.Trusted("signature does not match any of the realm's keys")
	}
	return SigFailed, text.Cleanf("signature does not match the realm's key kid=%s", kid)
}

// parseJWS parses a compact JWS with one signature by an accepted
// algorithm, returning its alg and kid (raw, for matching; sanitize before
// showing), or nil and why not.
func parseJWS(token string) (jws *jose.JSONWebSignature, alg, kid string, reason text.Clean) {
	jws, err := jose.ParseSignedCompact(token, verifyAlgs)
	if err != nil {
		return nil, "", "", text.Trusted("the token is not a signed JWT with an accepted algorithm (RS256/384/512, PS256, ES256/384, EdDSA)")
	}
	if len(jws.Signatures) != 1 {
		return nil, "", "", text.Trusted("the token does not carry exactly one signature")
	}
	h := jws.Signatures[0].Header
	return jws, h.Algorithm, h.KeyID, text.Clean{}
}

// signingKeys picks the public signing keys for kid (all keys when the token
// names none) whose alg, when stated, is alg.
func signingKeys(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
			if !k.Valid() {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}

func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *Client) httpClient() *http.Client {
	if c.http != nil {
		return c.http
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// jwksCache holds one client's fetched key sets by JWKS URL.
type jwksCache struct {
	mu      sync.Mutex
	entries map[string]jwksEntry
}

type jwksEntry struct {
	keys      []jose.JSONWebKey
	fetchedAt time.Time
}

// get returns the keys at url and whether they were fetched by this call:
// it fetches when they are not cached, older than JWKSCacheTTL, or when
// force is set. Concurrent callers may fetch twice; the last answer wins.
func (jc *jwksCache) get(ctx context.Context, c *Client, url string, force bool) (keys []jose.JSONWebKey, fresh bool, err error) {
	now := c.clock()
	jc.mu.Lock()
	e, ok := jc.entries[url]
	jc.mu.Unlock()
	if ok && !force && now.Sub(e.fetchedAt) < JWKSCacheTTL && !now.Before(e.fetchedAt) {
		return e.keys, false, nil
	}
	keys, err = fetchJWKS(ctx, c.httpClient(), url)
	if err != nil {
		return nil, false, err
	}
	jc.mu.Lock()
	if jc.entries == nil {
		jc.entries = map[string]jwksEntry{}
	}
	jc.entries[url] = jwksEntry{keys: keys, fetchedAt: now}
	jc.mu.Unlock()
	return keys, true, nil
}

// fetchJWKS GETs a JWK Set, reading at most MaxBodySize bytes. Keys that do
// not parse (unknown kty, encryption-only algs go-jose rejects) are skipped
// rather than failing the whole set.
func fetchJWKS(ctx context.Context, hc *http.Client, url string) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("bad JWKS URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer in time from %s", req.URL.Redacted())
		}
		return nil, fmt.Errorf("cannot reach %s", req.URL.Redacted())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS from %s failed", req.URL.Redacted())
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", req.URL.Redacted(), resp.StatusCode)
	}
	if len(body) > MaxBodySize {
		return nil, fmt.Errorf("the JWKS at %s is larger than %d KiB", req.URL.Redacted(), MaxBodySize>>10)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the answer of %s is not a JWK Set", req.URL.Redacted())
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err == nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
