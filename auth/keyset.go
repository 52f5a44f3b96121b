package auth

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/internal/text"
)

// KeySet is a set of public keys a user gave to check signatures against
// (inspect --verify --jwks), instead of the keys the realm publishes.
type KeySet struct {
	keys []jose.JSONWebKey
}

// Len is the number of usable keys in the set.
func (ks KeySet) Len() int { return len(ks.keys) }

// ParseKeySet reads a key set: a JWK Set ({"keys":[…]}), a single JWK, or
// PEM (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE blocks). Private keys are
// reduced to their public halves. An input with no usable key is an error.
func ParseKeySet(data []byte) (KeySet, error) {
	data = bytes.TrimSpace(data)
	var keys []jose.JSONWebKey
	switch {
	case bytes.HasPrefix(data, []byte("-----BEGIN")):
		for rest := data; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			k, err := pemKey(b)
			if err != nil {
				return KeySet{}, err
			}
			keys = append(keys, jose.JSONWebKey{Key: k})
		}
	case bytes.HasPrefix(data, []byte("{")):
		var set struct {
			Keys []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(data, &set); err != nil {
			return KeySet{}, errors.New("not a JWK Set, a JWK or a PEM public key (the JSON does not parse)")
		}
		raws := set.Keys
		if raws == nil {
			raws = []json.RawMessage{data} // a single JWK
		}
		for _, raw := range raws {
			var k jose.JSONWebKey
			if err := k.UnmarshalJSON(raw); err == nil {
				keys = append(keys, k)
			}
		}
	default:
		return KeySet{}, errors.New("not a JWK Set, a JWK or a PEM public key")
	}
	return newKeySet(keys)
}

func pemKey(b *pem.Block) (any, error) {
	switch b.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(b.Bytes)
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		return c.PublicKey, nil
	}
	return nil, text.Errorf("a PEM block of type %s is not a public key or certificate", b.Type)
}

// FetchKeySet GETs the JWK Set at url (http only for loopback hosts).
func (c *Client) FetchKeySet(ctx context.Context, url string) (KeySet, error) {
	if err := CheckURL(url); err != nil {
		return KeySet{}, text.Errorf("%s %v", url, err)
	}
	keys, err := fetchJWKS(ctx, c.httpClient(), url)
	if err != nil {
		return KeySet{}, err
	}
	return newKeySet(keys)
}

// newKeySet keeps the usable public keys of keys (private keys reduced to
// their public halves); none is an error.
func newKeySet(keys []jose.JSONWebKey) (KeySet, error) {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if !k.IsPublic() {
			k = k.Public()
		}
		if k.Valid() {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return KeySet{}, errors.New("the key set holds no usable public key")
	}
	return KeySet{keys: out}, nil
}

// VerifyWithKeySet checks token's signature against ks, whoever issued it:
// the user chose the keys. HS-signed and opaque tokens are SigNotChecked, as
// with Verify.
func (c *Client) VerifyWithKeySet(token string, ks KeySet) Verification {
	_, v, done := c.precheck(token)
	if done {
		return v
	}
	v.State, v.Reason = checkSignature(text.BearerToken(token), ks.keys, "the given key set")
	return v
}

// checkSignature checks a compact JWS against keys (described as where in
// messages).
func checkSignature(token string, keys []jose.JSONWebKey, where string) (SigState, text.Clean) {
	jws, alg, kid, reason := parseJWS(token)
	if jws == nil {
		return SigFailed, reason
	}
	candidates := signingKeys(keys, kid, alg)
	if len(candidates) == 0 && kid != "" {
		// A PEM key has no kid: try every key that fits the algorithm.
		candidates = signingKeys(withoutKid(keys), "", alg)
	}
	if len(candidates) == 0 {
		return SigFailed, text.Cleanf("no %s key with kid %s in %s", alg, kid, where)
	}
	for _, k := range candidates {
		if _, err := jws.Verify(k.Key); err == nil {
			return SigVerified, text.Clean{}
		}
	}
	return SigFailed, text.Cleanf("signature does not match any key in %s", where)
}

// withoutKid keeps the keys that name no kid.
func withoutKid(keys []jose.JSONWebKey) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == "" {
			out = append(out, k)
		}
	}
	return out
}
