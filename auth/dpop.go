package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DPoP (RFC 9449): a key of the client's own, kept as a secret of each
// shipkey key, proves at every token request and every API call that the
// caller holds it; the server binds the tokens it issues to the key's
// thumbprint (cnf.jkt), so a copied token is useless without the key.

// DPoPTokenType is the token_type of a DPoP-bound access token, and the
// Authorization scheme it is sent with.
const DPoPTokenType = "DPoP"

// DPoPProofType is the typ header of a DPoP proof.
const DPoPProofType = "dpop+jwt"

// DPoPKey is a client's DPoP key pair (ES256, P-256). It is safe for
// concurrent use.
type DPoPKey struct {
	priv *ecdsa.PrivateKey
	pub  jose.JSONWebKey // the public JWK every proof carries
	jkt  string
}

// NewDPoPKey makes a fresh ES256 key pair.
func NewDPoPKey() (*DPoPKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return newDPoPKey(priv)
}

func newDPoPKey(priv *ecdsa.PrivateKey) (*DPoPKey, error) {
	jkt, err := KeyThumbprint(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return &DPoPKey{priv: priv, pub: jose.JSONWebKey{Key: &priv.PublicKey}, jkt: jkt}, nil
}

// ParseDPoPKey reads a key Marshal wrote.
func ParseDPoPKey(b []byte) (*DPoPKey, error) {
	k, _, err := ParseClientKey(b)
	if err != nil {
		return nil, configError("the stored DPoP key cannot be read", "create the key again with {{dpop}}")
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, configError("the stored DPoP key is not an EC P-256 key", "create the key again with {{dpop}}")
	}
	return newDPoPKey(priv)
}

// Marshal is the key's private form (PKCS#8 PEM), for the secrets backend.
func (k *DPoPKey) Marshal() ([]byte, error) { return EncodeClientKey(k.priv) }

// JKT is the RFC 7638 thumbprint of the public key: the cnf.jkt of the
// tokens bound to it and the dpop_jkt of an authorization request.
func (k *DPoPKey) JKT() string { return k.jkt }

// Public is the public JWK every proof carries.
func (k *DPoPKey) Public() jose.JSONWebKey { return k.pub }

// dpopClaims are RFC 9449 §4.2's claims.
type dpopClaims struct {
	Jti   string `json:"jti"`
	Htm   string `json:"htm"`
	Htu   string `json:"htu"`
	Iat   int64  `json:"iat"`
	Ath   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// Proof signs a DPoP proof for one request: method and target (htu is the
// target without query and fragment), iat now, a unique jti, ath (the
// base64url SHA-256 of accessToken) when a token goes with the request, and
// the server's nonce when it asked for one.
func (k *DPoPKey) Proof(method, target, accessToken, nonce string, now time.Time) (string, error) {
	c := dpopClaims{
		Jti: randomString(), Htm: method, Htu: HTU(target), Iat: now.Unix(), Nonce: nonce,
	}
	if accessToken != "" {
		c.Ath = AccessTokenHash(accessToken)
	}
	key := jose.SigningKey{Algorithm: jose.ES256, Key: k.priv}
	return signCompact(key, DPoPProofType, map[jose.HeaderKey]any{"jwk": k.pub}, c)
}

// HTU is a request URL as a DPoP proof names it: without query and fragment
// (RFC 9449 §4.2).
func HTU(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		if i := strings.IndexAny(target, "?#"); i >= 0 {
			return target[:i]
		}
		return target
	}
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	return u.String()
}

// AccessTokenHash is a proof's ath: base64url(SHA-256(token)).
func AccessTokenHash(token string) string {
	return base64.RawURLEncoding.EncodeToString(sha256Sum([]byte(token)))
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// DPoPNonces remembers the last DPoP-Nonce each server sent (RFC 9449 §8),
// by origin (scheme://host:port), so the next proof to that server carries
// it. The zero value is ready; it is safe for concurrent use.
type DPoPNonces struct {
	mu sync.Mutex
	m  map[string]string
}

// Get is the nonce to send to target's server ("" when none is known).
func (n *DPoPNonces) Get(target string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[origin(target)]
}

// Remember keeps the DPoP-Nonce header of an answer from target's server,
// when it has one. It reports whether there was one.
func (n *DPoPNonces) Remember(target string, h http.Header) bool {
	v := strings.TrimSpace(h.Get("DPoP-Nonce"))
	if v == "" || len(v) > 1024 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]string{}
	}
	n.m[origin(target)] = v
	return true
}

func origin(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
