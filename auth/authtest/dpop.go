package authtest

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DPoPRequest is what a DPoP proof (RFC 9449) must match.
type DPoPRequest struct {
	Method string // the request's HTTP method
	URL    string // the request's absolute URL; query and fragment are ignored
	// AccessToken is the token sent with the request (a resource server's
	// check: the proof's ath must be its hash); "" at the token endpoint.
	AccessToken string
	// Nonce is the DPoP-Nonce the server requires in the proof; "" for none.
	Nonce string
	Now   time.Time // default time.Now
	// MaxAge bounds how far iat may be from Now either way (default 60 s,
	// Keycloak's allowed clock skew plus lifetime).
	MaxAge time.Duration
	// Replay, when set, refuses a proof whose jti it has seen.
	Replay *ReplayCache
}

// DPoPError is why a proof was refused: Code is "invalid_dpop_proof", or
// "use_dpop_nonce" when the proof lacks the nonce the server requires (the
// answer then carries a DPoP-Nonce header), Description Keycloak's text.
type DPoPError struct {
	Code, Description string
}

func (e *DPoPError) Error() string { return e.Code + ": " + e.Description }

// dpopAlgs are the algorithms a proof may be signed with (discovery's
// dpop_signing_alg_values_supported).
var dpopAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.PS256, jose.EdDSA}

func dpopAlgNames() []string {
	out := make([]string, len(dpopAlgs))
	for i, a := range dpopAlgs {
		out[i] = string(a)
	}
	return out
}

// CheckDPoP verifies a DPoP proof (the DPoP header's value) for req as a
// server must (RFC 9449 §4.3): a compact JWS with typ dpop+jwt signed by the
// public jwk in its header; htm and htu naming this request; iat close to
// now; a jti not seen before; ath when an access token goes with it; the
// server's nonce when it asks for one. It returns the RFC 7638 thumbprint
// (jkt) of the proof's key, which a bound token's cnf.jkt must equal.
func CheckDPoP(proof string, req DPoPRequest) (jkt string, err error) {
	if req.Now.IsZero() {
		req.Now = time.Now()
	}
	if req.MaxAge <= 0 {
		req.MaxAge = 60 * time.Second
	}
	key, c, err := parseDPoP(proof)
	if err != nil {
		return "", err
	}
	for _, check := range dpopChecks {
		if check.broken(c, req) {
			refusal := check.refusal // each caller its own error
			return "", &refusal
		}
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", invalidProof("No JWK in DPoP header")
	}
	if req.Replay != nil && !req.Replay.Fresh(c.Jti, time.Unix(*c.Iat, 0).Add(req.MaxAge), req.Now) {
		return "", invalidProof("DPoP proof has already been used")
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// invalidProof is a refusal of a proof, desc saying why.
func invalidProof(desc string) *DPoPError {
	return &DPoPError{Code: "invalid_dpop_proof", Description: desc}
}

// dpopClaims are a proof's claims.
type dpopClaims struct {
	Jti   string `json:"jti"`
	Htm   string `json:"htm"`
	Htu   string `json:"htu"`
	Iat   *int64 `json:"iat"`
	Ath   string `json:"ath"`
	Nonce string `json:"nonce"`
}

// parseDPoP parses a proof: a compact JWS with typ dpop+jwt signed by the
// public jwk in its header (returned), with the mandatory claims.
func parseDPoP(proof string) (*jose.JSONWebKey, *dpopClaims, error) {
	jws, err := jose.ParseSignedCompact(strings.TrimSpace(proof), dpopAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, nil, invalidProof("DPoP proof is not a signed JWT")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "dpop+jwt" {
		return nil, nil, invalidProof("Invalid or missing type in DPoP header: " + typ)
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() || !h.JSONWebKey.Valid() {
		return nil, nil, invalidProof("No JWK in DPoP header")
	}
	payload, err := jws.Verify(h.JSONWebKey)
	if err != nil {
		return nil, nil, invalidProof("DPoP verification failure: signature")
	}
	var c dpopClaims
	if json.Unmarshal(payload, &c) != nil || c.Jti == "" || c.Htm == "" || c.Htu == "" || c.Iat == nil {
		return nil, nil, invalidProof("DPoP mandatory claims are missing")
	}
	return h.JSONWebKey, &c, nil
}

// dpopChecks are what a proof's claims must match in req, in order: the
// first broken is the refusal.
var dpopChecks = []struct {
	broken  func(c *dpopClaims, req DPoPRequest) bool
	refusal DPoPError
}{
	{func(c *dpopClaims, req DPoPRequest) bool { return c.Htm != req.Method }, *invalidProof("DPoP HTTP method mismatch")},
	{func(c *dpopClaims, req DPoPRequest) bool { return !sameHTU(c.Htu, req.URL) }, *invalidProof("DPoP HTTP URL mismatch")},
	{func(c *dpopClaims, req DPoPRequest) bool {
		iat := time.Unix(*c.Iat, 0)
		return iat.After(req.Now.Add(req.MaxAge)) || iat.Before(req.Now.Add(-req.MaxAge))
	}, *invalidProof("DPoP proof is not active")},
	{func(c *dpopClaims, req DPoPRequest) bool {
		if req.AccessToken == "" {
			return false
		}
		sum := sha256.Sum256([]byte(req.AccessToken))
		return c.Ath != base64.RawURLEncoding.EncodeToString(sum[:])
	}, *invalidProof("DPoP proof access token hash mismatch")},
	{func(c *dpopClaims, req DPoPRequest) bool { return req.Nonce != "" && c.Nonce != req.Nonce },
		DPoPError{Code: "use_dpop_nonce", Description: "Authorization server requires nonce in DPoP proof"}},
}

// sameHTU compares a proof's htu with the request URL as RFC 9449 §4.3
// says: without query and fragment, scheme and host case-insensitively.
func sameHTU(htu, target string) bool {
	a, err1 := url.Parse(htu)
	b, err2 := url.Parse(target)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host) && a.EscapedPath() == b.EscapedPath()
}

// ReplayCache remembers one-time identifiers (a DPoP proof's or a client
// assertion's jti) until they expire. The zero value is ready; it is safe
// for concurrent use.
type ReplayCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// Fresh records id, valid until until, and reports whether it was not seen
// before (false: a replay).
func (c *ReplayCache) Fresh(id string, until, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if len(c.seen) > 1024 {
		for k, exp := range c.seen {
			if exp.Before(now) {
				delete(c.seen, k)
			}
		}
	}
	if _, ok := c.seen[id]; ok {
		return false
	}
	c.seen[id] = until
	return true
}
