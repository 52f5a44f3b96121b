package auth_test

import (
	"net/http"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/shipkey/shipkey/auth"
)

func TestDPoPProofNamesTheRequest(t *testing.T) {
	t.Parallel()
	k, err := auth.NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	proof, err := k.Proof("POST", "https://as.example/token?x=1#frag", "the-token", "n-1", now)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	h := jws.Signatures[0].Header
	if h.ExtraHeaders["typ"] != "dpop+jwt" || h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		t.Fatalf("header %+v: want typ dpop+jwt and a public jwk", h)
	}
	_, c := verifiedClaims(t, proof, jose.ES256, h.JSONWebKey)
	want := map[string]any{"htm": "POST", "htu": "https://as.example/token", "iat": float64(now.Unix()),
		"ath": auth.AccessTokenHash("the-token"), "nonce": "n-1"}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %v, want %v", k, c[k], v)
		}
	}
	if tp, _ := auth.KeyThumbprint(h.JSONWebKey.Key); tp != k.JKT() {
		t.Errorf("jkt %s, the proof's key %s", k.JKT(), tp)
	}
	// RFC 9449 §4.2's example: ath of "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU".
	if got := auth.AccessTokenHash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"); got != "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo" {
		t.Errorf("ath %s", got)
	}
	plain, _ := k.Proof("GET", "https://api.example/v1", "", "", now)
	_, c = verifiedClaims(t, plain, jose.ES256, h.JSONWebKey)
	if _, ok := c["ath"]; ok {
		t.Error("ath without a token")
	}
	if _, ok := c["nonce"]; ok {
		t.Error("nonce without one")
	}
}

func TestDPoPKeySurvivesStorage(t *testing.T) {
	t.Parallel()
	k, _ := auth.NewDPoPKey()
	b, err := k.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := auth.ParseDPoPKey(b)
	if err != nil || back.JKT() != k.JKT() {
		t.Fatalf("round trip: %v", err)
	}
	rsaPEM, _ := auth.EncodeClientKey(testRSAKey(t))
	if _, err := auth.ParseDPoPKey(rsaPEM); err == nil {
		t.Error("an RSA key was taken as a DPoP key")
	}
}

func TestDPoPNoncesAreKeptPerServer(t *testing.T) {
	t.Parallel()
	var n auth.DPoPNonces
	if n.Get("https://a.example/token") != "" {
		t.Error("a nonce before any")
	}
	if n.Remember("https://a.example/token", http.Header{}) {
		t.Error("remembered an absent header")
	}
	n.Remember("https://A.example/token", http.Header{"Dpop-Nonce": {"n-a"}})
	if got := n.Get("https://a.example/other?q"); got != "n-a" {
		t.Errorf("same server: %q", got)
	}
	if got := n.Get("https://b.example/token"); got != "" {
		t.Errorf("another server: %q", got)
	}
}
