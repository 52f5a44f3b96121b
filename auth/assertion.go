package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/cryptosigner"
)

// ClientAssertionType is RFC 7523's client_assertion_type for a JWT that
// authenticates the client (private_key_jwt and client_secret_jwt).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// AssertionLifetime is how long a client assertion is valid: long enough
// for a slow network, short enough that a captured one is of little use
// (Keycloak refuses one whose exp lies further than its own limit ahead).
const AssertionLifetime = 60 * time.Second

// minHMACSecret is the shortest client secret client_secret_jwt may sign
// with: RFC 7518 §3.2 requires a key of at least the hash's size.
const minHMACSecret = 32

// assertionClaims are RFC 7523 §3's claims.
type assertionClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	Jti string `json:"jti"`
	Iat int64  `json:"iat"`
	Nbf int64  `json:"nbf"`
	Exp int64  `json:"exp"`
}

// KeyAssertion signs a private_key_jwt client assertion for clientID with
// k: iss = sub = clientID, aud = audience (the token endpoint, which every
// server accepts; Keycloak also takes its issuer), a unique jti, iat and nbf
// now, exp AssertionLifetime later. The header names alg and kid.
func KeyAssertion(clientID, audience string, k crypto.Signer, kid string, alg jose.SignatureAlgorithm, now time.Time) (string, error) {
	return signAssertionJWT(clientID, audience, jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: joseSigner(k), KeyID: kid}}, now)
}

// SecretAssertion signs a client_secret_jwt client assertion (HS256 over
// the client secret), with the claims of KeyAssertion. A secret shorter than
// 32 bytes is refused: RFC 7518 does not allow HS256 with it.
func SecretAssertion(clientID, audience, secret string, now time.Time) (string, error) {
	if len(secret) < minHMACSecret {
		return "", configError(fmt.Sprintf("the client secret is %d bytes, and client_secret_jwt (HS256) needs at least %d", len(secret), minHMACSecret),
			"have the realm generate a longer secret (Keycloak: Credentials → Regenerate), or use client_secret_post")
	}
	return signAssertionJWT(clientID, audience, jose.SigningKey{Algorithm: jose.HS256, Key: []byte(secret)}, now)
}

func signAssertionJWT(clientID, audience string, key jose.SigningKey, now time.Time) (string, error) {
	claims := assertionClaims{
		Iss: clientID, Sub: clientID, Aud: audience, Jti: randomString(),
		Iat: now.Unix(), Nbf: now.Unix(), Exp: now.Add(AssertionLifetime).Unix(),
	}
	return signCompact(key, "JWT", nil, claims)
}

// signCompact signs v as a compact JWS with header typ and the extra header
// fields given.
func signCompact(key jose.SigningKey, typ jose.ContentType, extra map[jose.HeaderKey]any, v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	opts := (&jose.SignerOptions{}).WithType(typ)
	for k, val := range extra {
		opts = opts.WithHeader(k, val)
	}
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return obj.CompactSerialize()
}

// joseSigner is k in a form go-jose signs with: its own key types as they
// are, any other crypto.Signer (a hardware key) through cryptosigner.
func joseSigner(k crypto.Signer) any {
	switch k.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
		return k
	}
	return cryptosigner.Opaque(k)
}
