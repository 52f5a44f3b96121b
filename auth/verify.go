package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

func (c *Client) verify(ctx context.Context, conns []Connection, token string) Verification {
	d, err := Decode(token, c.clock())
	switch {
	case err != nil:
		return Verification{State: SigFailed, Reason: text.Safe(err.Error())}
	case d.Format == FormatOpaque:
		return Verification{State: SigNotChecked, Reason: "not a JWT: an opaque token has no signature to check"}
	}
	v := Verification{KeyID: d.Kid, Issuer: d.Issuer}
	if d.SymmetricSigned {
		// HS* is an HMAC with a secret only the server knows (Keycloak signs its
		// refresh tokens so): say what is known, no more.
		v.Reason = "HMAC-signed (" + text.Safe(d.Alg) + "): a client cannot check it"
		return v
	}
	iss, _ := d.Raw["iss"].(string)
	if iss == "" {
		v.Reason = "the token names no issuer; not fetching any keys"
		return v
	}
	conn, ok := matchIssuer(conns, iss)
	if !ok {
		v.Reason = text.Safe(fmt.Sprintf("issuer %s is not one of your connections; not fetching its keys", iss))
		return v
	}
	eps, err := c.Endpoints(ctx, conn)
	if err != nil {
		v.Reason = text.Safe("cannot find the realm's keys: " + err.Error())
		return v
	}
	if eps.JWKS == "" {
		v.Reason = "the realm offers no JWKS (certs) endpoint"
		return v
	}
	if err := CheckURL(eps.JWKS); err != nil {
		v.Reason = text.Safe("the realm's JWKS URL " + err.Error())
		return v
	}
	state, reason := c.verifyWithJWKS(ctx, eps.JWKS, text.BearerToken(token))
	v.State, v.Reason = state, reason
	return v
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
func (c *Client) verifyWithJWKS(ctx context.Context, jwksURL, token string) (SigState, string) {
	jws, err := jose.ParseSignedCompact(token, verifyAlgs)
	if err != nil {
		return SigFailed, "the token is not a signed JWT with an accepted algorithm (RS256/384/512, PS256, ES256/384, EdDSA)"
	}
	if len(jws.Signatures) != 1 {
		return SigFailed, "the token does not carry exactly one signature"
	}
	sig := jws.Signatures[0]
	alg, kid := sig.Header.Algorithm, sig.Header.KeyID // raw, for matching; sanitized when shown
	cache := &c.jwks
	keys, fresh, err := cache.get(ctx, c, jwksURL, false)
	if err != nil {
		return SigNotChecked, text.Safe("cannot fetch the realm's keys: " + err.Error())
	}
	candidates := signingKeys(keys, kid, alg)
	if len(candidates) == 0 && !fresh {
		if keys, _, err = cache.get(ctx, c, jwksURL, true); err != nil {
			return SigNotChecked, text.Safe("cannot fetch the realm's keys: " + err.Error())
		}
		candidates = signingKeys(keys, kid, alg)
	}
	if len(candidates) == 0 {
		if kid == "" {
			return SigFailed, text.Safe(fmt.Sprintf("the token names no kid and no %s key in the realm's JWKS fits", alg))
		}
		return SigFailed, text.Safe(fmt.Sprintf("no key with kid %s in the realm's JWKS", kid))
	}
	for _, k := range candidates {
		if _, err := jws.Verify(k.Key); err == nil {
			return SigVerified, ""
		}
	}
	if kid == "" {
		return SigFailed, "signature does not match any of the realm's keys"
	}
	return SigFailed, text.Safe(fmt.Sprintf("signature does not match the realm's key kid=%s", kid))
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
