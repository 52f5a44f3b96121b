package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/internal/text"
)

// Client keys: the private key a client signs its RFC 7523 assertions with
// (private_key_jwt) or proves its certificate with (RFC 8705 mTLS). They are
// read once from a file a person names (PEM or JWK) and from then on kept by
// the store's secrets backend in the one form EncodeClientKey writes.

// maxKeyFile bounds the size of a key or certificate file shipkey reads.
const maxKeyFile = 1 << 20

// ParseClientKey reads a private key from PEM (PKCS#8, PKCS#1 "RSA PRIVATE
// KEY" or SEC 1 "EC PRIVATE KEY") or from a private JWK (a bare key, or a key
// set holding exactly one private key). It accepts RSA of at least 2048 bits,
// EC P-256 and P-384, and Ed25519. The kid of a JWK is returned too ("" for
// PEM). Its errors never quote the input.
func ParseClientKey(data []byte) (key crypto.Signer, kid string, err error) {
	if len(data) > maxKeyFile {
		return nil, "", configError("the client key file is larger than 1 MiB", "pass the private key in PEM or JWK form")
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		key, kid, err = parseJWKKey(trimmed)
	} else {
		key, err = parsePEMKey(trimmed)
	}
	if err != nil {
		return nil, "", err
	}
	if err := checkClientKey(key); err != nil {
		return nil, "", err
	}
	return key, kid, nil
}

func parsePEMKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, configError("the client key file holds no private key", "pass a PEM file with a PRIVATE KEY block, or a private JWK")
		}
		var k any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(block.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, configError("the client key is encrypted with a passphrase", "decrypt it first (openssl pkey -in KEY -out PLAIN.pem); shipkey keeps it in its secrets backend")
		default:
			continue // a certificate or parameters block beside the key
		}
		if err != nil {
			return nil, configError("the client key's "+block.Type+" block cannot be read", "pass an unencrypted PKCS#8, PKCS#1 or SEC 1 PEM key")
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, configError("the client key is of an unsupported type", "use an RSA, EC P-256/P-384 or Ed25519 key")
		}
		return s, nil
	}
}

func parseJWKKey(data []byte) (crypto.Signer, string, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if json.Unmarshal(data, &set) == nil && set.Keys != nil {
		if len(set.Keys) != 1 {
			return nil, "", configError(fmt.Sprintf("the client key file is a key set of %d keys", len(set.Keys)), "pass a file with exactly one private key")
		}
		data = set.Keys[0]
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(data); err != nil {
		return nil, "", configError("the client key file is not a JWK shipkey can read", "pass a private JWK (with \"d\") or a PEM key")
	}
	if k.IsPublic() {
		return nil, "", configError("the client key file holds a public key only", "pass the private key (a JWK with \"d\", or PEM); the public half is what the realm registers")
	}
	s, ok := k.Key.(crypto.Signer)
	if !ok {
		return nil, "", configError("the client key is of an unsupported type", "use an RSA, EC P-256/P-384 or Ed25519 key")
	}
	return s, k.KeyID, nil
}

// checkClientKey refuses key types and sizes no realm should accept.
func checkClientKey(k crypto.Signer) error {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return configError(fmt.Sprintf("the client key is RSA %d bits", k.N.BitLen()), "use an RSA key of at least 2048 bits, or an EC P-256 key (--generate-client-key)")
		}
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return configError("the client key's curve is "+k.Curve.Params().Name, "use an EC P-256 or P-384 key")
		}
	case ed25519.PrivateKey:
	default:
		return configError("the client key is of an unsupported type", "use an RSA, EC P-256/P-384 or Ed25519 key")
	}
	return nil
}

// GenerateClientKey makes a new EC P-256 key (ES256), the smallest and
// fastest key every realm accepts for private_key_jwt.
func GenerateClientKey() (crypto.Signer, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// EncodeClientKey is the form a client key is kept in: PKCS#8 PEM.
// ParseClientKey reads it back.
func EncodeClientKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// KeyThumbprint is the RFC 7638 SHA-256 thumbprint of a public key,
// base64url without padding: the default kid of a client key and the jkt
// of a DPoP key.
func KeyThumbprint(pub crypto.PublicKey) (string, error) {
	k := jose.JSONWebKey{Key: pub}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// PublicJWKS is the key set a person registers with the realm for
// private_key_jwt (Keycloak: Credentials → Client Authenticator "Signed
// JWT" → Keys → JWKS), holding the public half of k with kid (the
// thumbprint when empty), use "sig" and alg. It is indented for printing.
func PublicJWKS(k crypto.Signer, kid string, alg jose.SignatureAlgorithm) ([]byte, error) {
	if kid == "" {
		var err error
		if kid, err = KeyThumbprint(k.Public()); err != nil {
			return nil, err
		}
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k.Public(), KeyID: kid, Use: "sig", Algorithm: string(alg)}}}
	return json.MarshalIndent(set, "", "  ")
}

// keyAlgs are the JWS algorithms a key can sign with, preferred first.
func keyAlgs(k crypto.Signer) []jose.SignatureAlgorithm {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.RS384, jose.PS384, jose.RS512, jose.PS512}
	case *ecdsa.PrivateKey:
		if k.Curve == elliptic.P384() {
			return []jose.SignatureAlgorithm{jose.ES384}
		}
		return []jose.SignatureAlgorithm{jose.ES256}
	case ed25519.PrivateKey:
		return []jose.SignatureAlgorithm{jose.EdDSA}
	}
	return nil
}

// SigningAlg picks the algorithm k signs client assertions with: the key's
// natural one (RS256, ES256, ES384, EdDSA), or, for RSA, the first the server
// lists in supported (discovery's token_endpoint_auth_signing_alg_values_supported).
// An empty supported list means the server did not say: the natural one. A
// key the server accepts no algorithm of is an error naming both.
func SigningAlg(k crypto.Signer, supported []string) (jose.SignatureAlgorithm, error) {
	algs := keyAlgs(k)
	if len(algs) == 0 {
		return "", configError("the client key is of an unsupported type", "use an RSA, EC P-256/P-384 or Ed25519 key")
	}
	if len(supported) == 0 {
		return algs[0], nil
	}
	for _, a := range algs {
		if slices.Contains(supported, string(a)) {
			return a, nil
		}
	}
	return "", configError(text.Cleanf("the realm accepts client assertions signed with %s, and this key signs %s", strings.Join(supported, ", "), algs[0]).String(),
		"use a key of a kind the realm accepts (--generate-client-key makes an ES256 key)")
}

// ParseClientCertificate pairs a PEM certificate chain (leaf first) with its
// private key for RFC 8705 mutual TLS. It checks that the key is the
// certificate's.
func ParseClientCertificate(certPEM []byte, key crypto.Signer) (*tls.Certificate, error) {
	if len(certPEM) > maxKeyFile {
		return nil, configError("the client certificate file is larger than 1 MiB", "pass the PEM certificate (leaf first)")
	}
	var cert tls.Certificate
	rest := certPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, block.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, configError("the client certificate file holds no CERTIFICATE block", "pass the PEM certificate the realm knows (leaf first)")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, configError("the client certificate cannot be read", "pass a PEM X.509 certificate")
	}
	if !publicKeysEqual(leaf.PublicKey, key.Public()) {
		return nil, configError("the client key is not the client certificate's key", "pass the key the certificate was issued for ({{client-key}})")
	}
	cert.PrivateKey, cert.Leaf = key, leaf
	return &cert, nil
}

// EncodeClientCertificate is the PEM chain of cert, the form it is kept in.
func EncodeClientCertificate(cert *tls.Certificate) []byte {
	var b bytes.Buffer
	for _, der := range cert.Certificate {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	return b.Bytes()
}

// CertificateThumbprint is the RFC 8705 x5t#S256 of a certificate: the
// base64url SHA-256 of its DER, as a certificate-bound token's cnf carries.
func CertificateThumbprint(der []byte) string {
	return base64.RawURLEncoding.EncodeToString(sha256Sum(der))
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}
