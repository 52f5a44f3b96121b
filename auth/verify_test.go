package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

func verifyCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// editJWT decodes one part (0 header, 1 payload) of token, lets edit change
// it, and re-encodes it; the signature is kept as it was.
func editJWT(t *testing.T, token string, part int, edit func(m map[string]any)) string {
	t.Helper()
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[part])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	parts[part] = base64.RawURLEncoding.EncodeToString(out)
	return strings.Join(parts, ".")
}

// countingServer counts every request it gets and answers 404.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func wantVerification(t *testing.T, got auth.Verification, state auth.SigState, reason string) {
	t.Helper()
	if got.State != state || !strings.Contains(got.Reason.String(), reason) {
		t.Errorf("Verify = %v %q, want %v with reason containing %q", got.State, got.Reason, state, reason)
	}
	texttest.RequireSafe(t, "reason", got.Reason.String())
	texttest.RequireSafe(t, "issuer", got.Issuer.String())
	texttest.RequireSafe(t, "kid", got.KeyID.String())
}

func TestVerifyKeycloak(t *testing.T) {
	t.Parallel()
	srv, c, conn, ts := demoRealm(t, nil)
	ctx := verifyCtx(t)
	other := auth.Connection{AuthURL: "https://auth.example.com", ClientID: "x"}
	conns := []auth.Connection{other, conn}
	d, err := auth.Decode(ts.AccessToken, claimsNow)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("verified", func(t *testing.T) {
		v := c.Verify(ctx, conns, ts.AccessToken)
		if v.State != auth.SigVerified || v.Reason.String() != "" || v.KeyID.String() != d.Kid || v.Issuer.String() != srv.Issuer() {
			t.Fatalf("Verify = %+v, want verified with kid %q issuer %q", v, d.Kid, srv.Issuer())
		}
		if v.State.String() != "verified" {
			t.Errorf("String = %q", v.State.String())
		}
		// Keys are cached per JWKS URL.
		before := srv.Count("certs")
		for range 3 {
			if v := c.Verify(ctx, conns, "Bearer "+ts.AccessToken); v.State != auth.SigVerified {
				t.Fatalf("again: %+v", v)
			}
		}
		if n := srv.Count("certs"); n != before || n != 1 {
			t.Errorf("certs fetched %d times (before %d), want once", n, before)
		}
	})

	t.Run("tampered payload", func(t *testing.T) {
		forged := editJWT(t, ts.AccessToken, 1, func(m map[string]any) {
			m["realm_access"] = map[string]any{"roles": []string{"admin"}}
		})
		v := c.Verify(ctx, conns, forged)
		wantVerification(t, v, auth.SigFailed, "signature does not match the realm's key kid="+d.Kid)
	})

	t.Run("HS512 refresh token", func(t *testing.T) {
		before := srv.Count("certs")
		v := c.Verify(ctx, conns, ts.RefreshToken)
		wantVerification(t, v, auth.SigNotChecked, "HMAC-signed (HS512): a client cannot check it")
		if v.Reason.String() != "HMAC-signed (HS512): a client cannot check it" {
			t.Errorf("reason = %q", v.Reason)
		}
		if srv.Count("certs") != before {
			t.Error("an HS512 token made Verify fetch keys")
		}
	})

	t.Run("unknown kid", func(t *testing.T) {
		rogue := editJWT(t, ts.AccessToken, 0, func(m map[string]any) { m["kid"] = "rogue-kid" })
		v := c.Verify(ctx, conns, rogue)
		wantVerification(t, v, auth.SigFailed, "no key with kid rogue-kid in the realm's JWKS")
	})

	t.Run("alg none", func(t *testing.T) {
		none := editJWT(t, ts.AccessToken, 0, func(m map[string]any) { m["alg"] = "none" })
		none = strings.Join(strings.Split(none, ".")[:2], ".") + "."
		v := c.Verify(ctx, conns, none)
		wantVerification(t, v, auth.SigFailed, "accepted algorithm")
	})

	t.Run("opaque", func(t *testing.T) {
		v := c.Verify(ctx, conns, "d46dc821-25ba-43cc-8b31-421602fde0d2")
		wantVerification(t, v, auth.SigNotChecked, "opaque")
	})

	t.Run("garbage JWT", func(t *testing.T) {
		v := c.Verify(ctx, conns, "Zm9v.YmFy.YmF6")
		wantVerification(t, v, auth.SigFailed, "not a JSON object")
	})

	t.Run("no connections", func(t *testing.T) {
		v := c.Verify(ctx, nil, ts.AccessToken)
		wantVerification(t, v, auth.SigNotChecked, "is not one of your connections; not fetching its keys")
	})
}

func TestVerifyNeverFetchesWhatTheTokenNames(t *testing.T) {
	t.Parallel()
	srv, c, conn, ts := demoRealm(t, nil)
	ctx := verifyCtx(t)
	evil, hits := countingServer(t)

	t.Run("foreign issuer", func(t *testing.T) {
		foreign := editJWT(t, ts.AccessToken, 1, func(m map[string]any) { m["iss"] = evil.URL + "/\x1b[2J" })
		foreign = editJWT(t, foreign, 0, func(m map[string]any) {
			m["jku"] = evil.URL + "/jwks"
			m["x5u"] = evil.URL + "/cert.pem"
		})
		v := c.Verify(ctx, []auth.Connection{conn}, foreign)
		wantVerification(t, v, auth.SigNotChecked, "is not one of your connections; not fetching its keys")
		if !strings.Contains(v.Reason.String(), evil.URL) {
			t.Errorf("reason %q should name the issuer", v.Reason)
		}
		if !strings.Contains(v.Reason.String(), "--jwks URL") {
			t.Errorf("reason %q should say how to give the issuer's keys (--jwks)", v.Reason)
		}
	})

	t.Run("known issuer with jku and x5u", func(t *testing.T) {
		before := srv.Count("certs")
		named := editJWT(t, ts.AccessToken, 0, func(m map[string]any) {
			m["jku"] = evil.URL + "/jwks"
			m["x5u"] = evil.URL + "/cert.pem"
		})
		v := c.Verify(ctx, []auth.Connection{conn}, named)
		// The header is part of the signed input: changing it breaks the
		// signature, and the keys came from the realm, not from jku.
		wantVerification(t, v, auth.SigFailed, "signature does not match")
		if srv.Count("certs") == before && before == 0 {
			t.Error("the realm's certs were never fetched")
		}
	})

	if n := hits.Load(); n != 0 {
		t.Errorf("Verify sent %d requests to a URL the token named", n)
	}
}

func TestVerifyKeyRotationAndCacheExpiry(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return claimsNow.Add(time.Duration(offset.Load())) }
	srv, c, conn, ts := demoRealm(t, clock)
	ctx := verifyCtx(t)
	conns := []auth.Connection{conn}
	if v := c.Verify(ctx, conns, ts.AccessToken); v.State != auth.SigVerified {
		t.Fatalf("before rotation: %+v", v)
	}

	if err := srv.RotateKey(); err != nil {
		t.Fatal(err)
	}
	ts2, err := c.Login(ctx, conn, auth.ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := auth.Decode(ts.AccessToken, claimsNow)
	d2, _ := auth.Decode(ts2.AccessToken, claimsNow)
	if d1.Kid == d2.Kid {
		t.Fatalf("RotateKey kept kid %q", d1.Kid)
	}
	if v := c.Verify(ctx, conns, ts2.AccessToken); v.State != auth.SigVerified || v.KeyID.String() != d2.Kid {
		t.Fatalf("new key, keys cached from before rotation: %+v", v)
	}
	if v := c.Verify(ctx, conns, ts.AccessToken); v.State != auth.SigVerified {
		t.Fatalf("old key after rotation: %+v", v)
	}
	n := srv.Count("certs")
	if n != 2 {
		t.Errorf("certs fetched %d times, want 2 (first use, then the unknown kid)", n)
	}
	offset.Store(int64(auth.JWKSCacheTTL - time.Second))
	c.Verify(ctx, conns, ts.AccessToken)
	if srv.Count("certs") != n {
		t.Error("keys fetched again before JWKSCacheTTL")
	}
	offset.Store(int64(auth.JWKSCacheTTL + time.Second))
	if v := c.Verify(ctx, conns, ts.AccessToken); v.State != auth.SigVerified {
		t.Fatalf("after TTL: %+v", v)
	}
	if srv.Count("certs") != n+1 {
		t.Errorf("keys not fetched again after JWKSCacheTTL: %d fetches", srv.Count("certs"))
	}
}

func TestVerifyJWKSFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fault  authtest.Fault
		reason string
	}{
		{"server error", authtest.Fault{Endpoint: "certs", Status: 500, Body: `{"error":"boom"}`}, "answered HTTP 500"},
		{"not JSON", authtest.Fault{Endpoint: "certs", Malformed: true}, "is not a JWK Set"},
		{"huge", authtest.Fault{Endpoint: "certs", Huge: true}, "cannot fetch the realm's keys"},
		// Go's transport retries a GET once on a reused connection that drops.
		{"dropped", authtest.Fault{Endpoint: "certs", Drop: true, Times: 2}, "cannot fetch the realm's keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, conn, ts := demoRealm(t, nil)
			srv.Inject(tt.fault)
			v := c.Verify(verifyCtx(t), []auth.Connection{conn}, ts.AccessToken)
			wantVerification(t, v, auth.SigNotChecked, tt.reason)
			if strings.Contains(v.Reason.String(), ts.AccessToken) || strings.Contains(v.Reason.String(), authtest.DemoClientSecret) {
				t.Errorf("reason leaks a secret: %q", v.Reason)
			}
			// A failed fetch is not cached: a later call fetches again (a
			// second try may still meet the rest of a dropped fault).
			var after auth.Verification
			for range 2 {
				if after = c.Verify(verifyCtx(t), []auth.Connection{conn}, ts.AccessToken); after.State == auth.SigVerified {
					break
				}
			}
			if after.State != auth.SigVerified {
				t.Errorf("after the fault: %+v", after)
			}
		})
	}
}
