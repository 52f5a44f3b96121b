package auth_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
)

func verifiedClaims(t *testing.T, tok string, alg jose.SignatureAlgorithm, key any) (jose.Header, map[string]any) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{alg})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		t.Fatalf("signature: %v", err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return jws.Signatures[0].Header, c
}

func TestKeyAssertionHasRFC7523Claims(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const aud = "https://auth.example.com/auth/realms/master/protocol/openid-connect/token"
	for _, k := range []struct {
		name string
		alg  jose.SignatureAlgorithm
	}{{"ec", jose.ES256}, {"rsa", jose.PS256}} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			key, _ := auth.GenerateClientKey()
			if k.name == "rsa" {
				key = testRSAKey(t)
			}
			tok, err := auth.KeyAssertion("shipping-api", aud, key, "kid-1", k.alg, now)
			if err != nil {
				t.Fatal(err)
			}
			h, c := verifiedClaims(t, tok, k.alg, key.Public())
			if h.KeyID != "kid-1" || h.ExtraHeaders["typ"] != "JWT" {
				t.Errorf("header kid %q typ %v", h.KeyID, h.ExtraHeaders["typ"])
			}
			if c["iss"] != "shipping-api" || c["sub"] != "shipping-api" || c["aud"] != aud {
				t.Errorf("iss/sub/aud %v", c)
			}
			if c["iat"] != float64(now.Unix()) || c["exp"] != float64(now.Add(auth.AssertionLifetime).Unix()) {
				t.Errorf("iat %v exp %v", c["iat"], c["exp"])
			}
			again, _ := auth.KeyAssertion("shipping-api", aud, key, "kid-1", k.alg, now)
			_, c2 := verifiedClaims(t, again, k.alg, key.Public())
			if c["jti"] == "" || c["jti"] == c2["jti"] {
				t.Errorf("jti %v then %v: want unique", c["jti"], c2["jti"])
			}
		})
	}
}

func TestSecretAssertionIsHS256OverTheSecret(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s", 32)
	tok, err := auth.SecretAssertion("shipping-api", "https://as/token", secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, c := verifiedClaims(t, tok, jose.HS256, []byte(secret))
	if c["sub"] != "shipping-api" {
		t.Errorf("claims %v", c)
	}
	_, err = auth.SecretAssertion("shipping-api", "https://as/token", "short-SECRETMARK", time.Now())
	if err == nil || strings.Contains(err.Error(), "SECRETMARK") || !strings.Contains(err.Error(), "client_secret_jwt") {
		t.Errorf("short secret: %v", err)
	}
}
