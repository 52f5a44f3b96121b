package auth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
)

func testRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParseClientKeyReadsEveryForm(t *testing.T) {
	t.Parallel()
	rsaKey := testRSAKey(t)
	ec256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf(t, "PRIVATE KEY", der)
	}
	sec1, _ := x509.MarshalECPrivateKey(ec256)
	jwk, _ := json.Marshal(jose.JSONWebKey{Key: ec384, KeyID: "mine"})
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ed, KeyID: "set"}}})
	cert := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name, kid string
		in        []byte
		pub       crypto.PublicKey
		alg       jose.SignatureAlgorithm
	}{
		{"pkcs8-rsa", "", pkcs8(rsaKey), rsaKey.Public(), jose.RS256},
		{"pkcs1-rsa", "", pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), rsaKey.Public(), jose.RS256},
		{"sec1-ec256", "", pemOf(t, "EC PRIVATE KEY", sec1), ec256.Public(), jose.ES256},
		{"pkcs8-ec384-after-a-certificate", "", append(cert, pkcs8(ec384)...), ec384.Public(), jose.ES384},
		{"pkcs8-ed25519", "", pkcs8(ed), ed.Public(), jose.EdDSA},
		{"jwk-ec384", "mine", jwk, ec384.Public(), jose.ES384},
		{"jwks-ed25519", "set", set, ed.Public(), jose.EdDSA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, kid, err := auth.ParseClientKey(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if kid != tc.kid {
				t.Errorf("kid %q, want %q", kid, tc.kid)
			}
			if !k.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tc.pub) {
				t.Error("parsed a different key")
			}
			if alg, err := auth.SigningAlg(k, nil); err != nil || alg != tc.alg {
				t.Errorf("SigningAlg = %s, %v; want %s", alg, err, tc.alg)
			}
			// The stored form reads back as the same key.
			enc, err := auth.EncodeClientKey(k)
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := auth.ParseClientKey(enc)
			if err != nil || !back.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tc.pub) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

func TestParseClientKeyRefusesWithoutQuotingTheInput(t *testing.T) {
	t.Parallel()
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	der521, _ := x509.MarshalPKCS8PrivateKey(p521)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubJWK, _ := json.Marshal(jose.JSONWebKey{Key: ec.Public()})
	two, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: ec}, {Key: ec}}})
	for name, in := range map[string][]byte{
		"rsa-1024":     pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)),
		"p521":         pemOf(t, "PRIVATE KEY", der521),
		"public-jwk":   pubJWK,
		"two-keys":     two,
		"encrypted":    pemOf(t, "ENCRYPTED PRIVATE KEY", []byte("secret-bytes-SECRETMARK")),
		"garbage-pem":  pemOf(t, "PRIVATE KEY", []byte("SECRETMARK")),
		"no-pem":       []byte("SECRETMARK not a key"),
		"garbage-json": []byte(`{"kty":"EC","d":"SECRETMARK"}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := auth.ParseClientKey(in)
			if err == nil {
				t.Fatal("accepted")
			}
			if msg := err.Error(); strings.Contains(msg, "SECRETMARK") || strings.Contains(msg, "\n") {
				t.Errorf("message %q quotes the input or is not one line", msg)
			}
			if auth.KindOf(err) != auth.KindConfig {
				t.Errorf("kind %v, want config", auth.KindOf(err))
			}
		})
	}
}

// RFC 7638 §3.1's example key and thumbprint.
func TestKeyThumbprintIsRFC7638(t *testing.T) {
	t.Parallel()
	const n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON([]byte(`{"kty":"RSA","e":"AQAB","n":"` + n + `"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := auth.KeyThumbprint(k.Key)
	if err != nil {
		t.Fatal(err)
	}
	if want := "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Errorf("thumbprint %s, want %s", got, want)
	}
}

func TestPublicJWKSHoldsThePublicHalfOnly(t *testing.T) {
	t.Parallel()
	k, err := auth.GenerateClientKey()
	if err != nil {
		t.Fatal(err)
	}
	out, err := auth.PublicJWKS(k, "", jose.ES256)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(out, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("%s: %v", out, err)
	}
	got := set.Keys[0]
	tp, _ := auth.KeyThumbprint(k.Public())
	if _, ok := got["d"]; ok {
		t.Error("the JWKS holds the private key")
	}
	if got["kid"] != tp || got["alg"] != "ES256" || got["use"] != "sig" || got["crv"] != "P-256" {
		t.Errorf("key %v, want kid %s, alg ES256, use sig, crv P-256", got, tp)
	}
}

func TestSigningAlgFollowsTheRealm(t *testing.T) {
	t.Parallel()
	rsaKey := testRSAKey(t)
	ec, _ := auth.GenerateClientKey()
	if alg, err := auth.SigningAlg(rsaKey, []string{"PS256", "ES256"}); err != nil || alg != jose.PS256 {
		t.Errorf("RSA with PS256 offered: %s, %v", alg, err)
	}
	_, err := auth.SigningAlg(ec, []string{"RS256", "PS256\x1b[31m"})
	if err == nil {
		t.Fatal("an EC key was accepted by a realm that takes RSA only")
	}
	if msg := err.Error(); !strings.Contains(msg, "RS256") || !strings.Contains(msg, "ES256") || strings.Contains(msg, "\x1b") {
		t.Errorf("message %q should name both algorithms, cleaned", msg)
	}
}

func selfSigned(t *testing.T, k crypto.Signer) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shipping-api"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "CERTIFICATE", der)
}

func TestParseClientCertificateChecksTheKey(t *testing.T) {
	t.Parallel()
	k, _ := auth.GenerateClientKey()
	other, _ := auth.GenerateClientKey()
	certPEM := selfSigned(t, k)
	c, err := auth.ParseClientCertificate(certPEM, k)
	if err != nil {
		t.Fatal(err)
	}
	if string(auth.EncodeClientCertificate(c)) != string(certPEM) {
		t.Error("the stored form differs from the certificate read")
	}
	if tp := auth.CertificateThumbprint(c.Certificate[0]); len(tp) != 43 {
		t.Errorf("x5t#S256 %q", tp)
	}
	if _, err := auth.ParseClientCertificate(certPEM, other); err == nil || !strings.Contains(err.Error(), "not the client certificate's key") {
		t.Errorf("another key: %v", err)
	}
	if _, err := auth.ParseClientCertificate([]byte("nothing"), k); err == nil {
		t.Error("accepted a file without a certificate")
	}
}
