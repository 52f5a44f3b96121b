package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// besideRealm is a realm whose discovery document sits beside the token
// endpoint (the issuer's .well-known answers 404) and whose key set is at
// /jwks (Keycloak's certs path answers 404).
func besideRealm(t *testing.T) (*authtest.Server, *auth.Client, auth.Connection, *auth.TokenSet) {
	t.Helper()
	cfg := authtest.DemoConfig()
	cfg.Now = func() time.Time { return claimsNow }
	cfg.DiscoveryBesideToken, cfg.JWKSPath = true, "/jwks"
	srv := authtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	c, err := auth.NewClient(auth.Options{Now: func() time.Time { return claimsNow }, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	conn := auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: authtest.DemoClientID}
	ts, err := c.Login(verifyCtx(t), conn, auth.ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return srv, c, conn, ts
}

func TestVerifyDiscoveryBesideToken(t *testing.T) {
	t.Parallel()
	srv, c, conn, ts := besideRealm(t)
	ctx := verifyCtx(t)
	v := c.Verify(ctx, []auth.Connection{conn}, ts.AccessToken)
	if v.State != auth.SigVerified {
		t.Fatalf("Verify = %+v, want verified through the discovery beside the token endpoint", v)
	}
	// A key made with --issuer finds the keys the same way.
	c2, err := auth.NewClient(auth.Options{Now: func() time.Time { return claimsNow }})
	if err != nil {
		t.Fatal(err)
	}
	withIssuer := conn
	withIssuer.Issuer = srv.Issuer()
	if v := c2.Verify(ctx, []auth.Connection{withIssuer}, ts.AccessToken); v.State != auth.SigVerified {
		t.Fatalf("with --issuer: %+v", v)
	}
	ep, err := c2.Endpoints(ctx, withIssuer)
	if err != nil || !strings.HasSuffix(ep.JWKS, "/jwks") {
		t.Fatalf("Endpoints = %+v, %v; want the discovered /jwks", ep, err)
	}
}

func TestVerifyKeysUnavailableNamesWhatWasTried(t *testing.T) {
	t.Parallel()
	srv, c, conn, ts := besideRealm(t)
	// Neither discovery document answers: Keycloak's certs path is tried
	// last, and answers 404 here.
	srv.Inject(authtest.Fault{Endpoint: "discovery", Status: 404, Body: `{"error":"nope"}`, Times: 2})
	v := c.Verify(verifyCtx(t), []auth.Connection{conn}, ts.AccessToken)
	realm := srv.Issuer()
	for _, want := range []string{
		realm + "/protocol/openid-connect/certs answered HTTP 404",
		"discovery tried at " + realm + "/.well-known/openid-configuration (HTTP 404), " +
			realm + "/protocol/openid-connect/.well-known/openid-configuration (HTTP 404)",
	} {
		wantVerification(t, v, auth.SigNotChecked, want)
	}
	if !v.KeysUnavailable {
		t.Errorf("KeysUnavailable not set: %+v", v)
	}
}

// jwksOf GETs the realm's key set.
func jwksOf(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

func TestVerifyWithKeySet(t *testing.T) {
	t.Parallel()
	srv, c, _, ts := besideRealm(t)
	jwks := jwksOf(t, srv.Issuer()+"/jwks")
	forged := editJWT(t, ts.AccessToken, 1, func(m map[string]any) { m["sub"] = "mallory" })

	ks, err := auth.ParseKeySet(jwks)
	if err != nil || ks.Len() == 0 {
		t.Fatalf("ParseKeySet(JWKS) = %d keys, %v", ks.Len(), err)
	}
	if v := c.VerifyWithKeySet(ts.AccessToken, ks); v.State != auth.SigVerified {
		t.Errorf("JWKS: %+v", v)
	}
	wantVerification(t, c.VerifyWithKeySet(forged, ks), auth.SigFailed, "signature does not match any key in the given key set")

	// The same key as PEM (no kid): tried for any kid.
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	ks, err = auth.ParseKeySet(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.VerifyWithKeySet(ts.AccessToken, ks); v.State != auth.SigVerified {
		t.Errorf("PEM: %+v", v)
	}
	// A single JWK works too.
	one, _ := json.Marshal(set.Keys[0])
	if ks, err := auth.ParseKeySet(one); err != nil || c.VerifyWithKeySet(ts.AccessToken, ks).State != auth.SigVerified {
		t.Errorf("one JWK: %v", err)
	}

	// Another key: no match.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ = x509.MarshalPKIXPublicKey(&other.PublicKey)
	ks, _ = auth.ParseKeySet(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	if v := c.VerifyWithKeySet(ts.AccessToken, ks); v.State != auth.SigFailed {
		t.Errorf("another key: %+v", v)
	}

	// From a URL.
	ks, err = c.FetchKeySet(context.Background(), srv.Issuer()+"/jwks")
	if err != nil || c.VerifyWithKeySet(ts.AccessToken, ks).State != auth.SigVerified {
		t.Errorf("FetchKeySet: %v", err)
	}

	for _, bad := range []string{"", "hello", `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		if _, err := auth.ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("ParseKeySet(%q) accepted", bad)
		}
	}
}
