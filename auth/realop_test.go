package auth_test

// Tests of the grants against a real third-party OpenID provider: the npm
// package oidc-provider, pinned in testdata/oidcprovider/package-lock.json
// and driven by testdata/oidcprovider/server.js (see internal/optest). Its
// development login and consent pages are completed by optest.Browser, a
// few lines of HTTP that fill and submit each page's form as a person would.
//
// Setup: npm ci --prefix auth/testdata/oidcprovider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/optest"
	"github.com/shipkey/shipkey/internal/testpar"
)

func TestMain(m *testing.M) {
	// Many tests wait: on the device grant's poll interval, on a sign-in's
	// bound, on the npm servers. More run at once than the CPUs (go test's
	// default).
	testpar.Default(4)
	code := m.Run()
	optest.Stop()
	os.Exit(code)
}

func startOP(t *testing.T) *optest.Provider { return optest.Start(t) }

// browse runs the browser on the prompt's URL in the background, as a
// $BROWSER would; its outcome is reported on the returned channel.
func browse(b optest.Browser, edit func(string) string) (auth.Prompter, <-chan error) {
	done := make(chan error, 1)
	return func(p auth.Prompt) {
		u := p.OpenURL()
		if edit != nil {
			u = edit(u)
		}
		go func() { _, _, err := b.Visit(u); done <- err }()
	}, done
}

func opClient(t *testing.T) *auth.Client {
	t.Helper()
	c, err := auth.NewClient(auth.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenIDProviderClientCredentials(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID}
	ts, err := c.Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if ts.AccessToken == "" || ts.RefreshToken != "" || ts.AccessExpiresAt.IsZero() {
		t.Fatalf("token set %+v", ts.Redacted())
	}
	res, err := c.EndSession(opCtx(t), conn, auth.ClientAuth{Secret: p.ClientSecret}, ts)
	if err != nil || res.Via != "revocation" {
		t.Fatalf("logout: %+v, %v", res, err)
	}
	_, err = c.Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: "wrong-secret-123"}})
	if auth.KindOf(err) != auth.KindInvalidClient {
		t.Fatalf("wrong secret: %v", err)
	}
	assertNoSecrets(t, err, p.ClientSecret, "wrong-secret-123")
}

func TestOpenIDProviderDeviceCode(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID, Scopes: []string{"openid"}}
	t.Run("approved, refreshed, logged out", func(t *testing.T) {
		t.Parallel()
		prompt, browsed := browse(optest.Browser{}, nil)
		ts, err := c.Obtain(opCtx(t), auth.GrantDeviceCode, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}, Prompt: prompt})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-browsed; err != nil {
			t.Fatal(err)
		}
		if ts.AccessToken == "" || ts.RefreshToken == "" {
			t.Fatalf("token set %+v", ts.Redacted())
		}
		ts2, err := c.Refresh(opCtx(t), conn, auth.ClientAuth{Secret: p.ClientSecret}, ts)
		if err != nil || ts2.AccessToken == ts.AccessToken {
			t.Fatalf("refresh: %v", err)
		}
		// oidc-provider's end_session_endpoint is RP-initiated logout, a
		// page for browsers: the session ends by revocation.
		if res, err := c.EndSession(opCtx(t), conn, auth.ClientAuth{Secret: p.ClientSecret}, ts2); err != nil || res.Via != "revocation" {
			t.Fatalf("logout: %+v, %v", res, err)
		}
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		prompt, _ := browse(optest.Browser{Deny: true}, nil)
		_, err := c.Obtain(opCtx(t), auth.GrantDeviceCode, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}, Prompt: prompt})
		if auth.KindOf(err) != auth.KindAccessDenied {
			t.Fatalf("denied device request: %v", err)
		}
		assertNoSecrets(t, err, p.ClientSecret)
	})
}

func TestOpenIDProviderAuthCode(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.ClientID, Scopes: []string{"openid"}}
	public := auth.Connection{Issuer: p.Issuer, ClientID: p.PublicClientID, Scopes: []string{"openid"}, PublicClient: true}
	for name, tc := range map[string]struct {
		conn   auth.Connection
		secret string
	}{"confidential": {conn, p.ClientSecret}, "public": {public, ""}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prompt, browsed := browse(optest.Browser{}, nil)
			ts, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: tc.conn, ClientAuth: auth.ClientAuth{Secret: tc.secret}, Prompt: prompt, Wait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-browsed; err != nil {
				t.Fatal(err)
			}
			if ts.AccessToken == "" || ts.IDToken == "" {
				t.Fatalf("token set %+v", ts.Redacted())
			}
		})
	}
	t.Run("wrong PKCE verifier refused", func(t *testing.T) {
		t.Parallel()
		sum := sha256.Sum256([]byte("an attacker's verifier, long enough to be one: 0123456789abcdef"))
		inject := func(u string) string {
			pu, _ := url.Parse(u)
			q := pu.Query()
			q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
			pu.RawQuery = q.Encode()
			return pu.String()
		}
		prompt, _ := browse(optest.Browser{}, inject)
		plain := conn
		plain.NoPAR = true // a pushed request cannot be edited on its way through the browser
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: plain, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}, Prompt: prompt, Wait: time.Minute})
		var ae *auth.Error
		if err == nil || !asAuthError(err, &ae) || ae.Code != "invalid_grant" {
			t.Fatalf("an injected code was not refused: %v", err)
		}
		assertNoSecrets(t, err, p.ClientSecret)
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		prompt, _ := browse(optest.Browser{Deny: true}, nil)
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}, Prompt: prompt, Wait: time.Minute})
		if auth.KindOf(err) != auth.KindAccessDenied {
			t.Fatalf("denied sign-in: %v", err)
		}
	})
	t.Run("no browser comes back", func(t *testing.T) {
		t.Parallel()
		_, err := c.Obtain(opCtx(t), auth.GrantAuthCode, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: p.ClientSecret}, Prompt: func(auth.Prompt) {}, Wait: time.Second})
		if auth.KindOf(err) != auth.KindExpired {
			t.Fatalf("timed-out wait: %v", err)
		}
	})
}

func asAuthError(err error, target **auth.Error) bool { return errors.As(err, target) }

// The real provider's refusals of a hardened client asked the plain way
// (no DPoP proof; the secret instead of the client's own method) are
// "invalid_grant: grant request is invalid" and "invalid_client: client
// authentication failed"; shipkey's line names the way out from its
// discovery: --dpop, and the method sent, the realm's and --client-auth.
func TestOpenIDProviderRefusalsOfHardenedClientsNameTheWayOut(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	h := p.Hardened
	for _, tc := range []struct {
		id, secret string
		kind       auth.ErrorKind
		want       []string
	}{
		{h.DPoPClientID, p.ClientSecret, auth.KindConfig, []string{"takes DPoP proofs", "create the key again with --dpop"}},
		{h.HMACClientID, h.JWTSecret, auth.KindInvalidClient, []string{"other than client_secret_post or client_secret_basic", "client_secret_jwt", "--client-auth METHOD"}},
		{h.RSAClientID, p.ClientSecret, auth.KindInvalidClient, []string{"other than client_secret_post or client_secret_basic", "private_key_jwt", "--client-auth METHOD"}},
		{h.MTLSClientID, p.ClientSecret, auth.KindInvalidClient, []string{"other than client_secret_post or client_secret_basic", "tls_client_auth", "--client-auth METHOD"}},
	} {
		conn := auth.Connection{Issuer: p.Issuer, ClientID: tc.id}
		_, err := opClient(t).Obtain(opCtx(t), auth.GrantClientCredentials, auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Secret: tc.secret}})
		if auth.KindOf(err) != tc.kind {
			t.Errorf("%s: %v, want kind %v", tc.id, err, tc.kind)
			continue
		}
		assertNoSecrets(t, err, tc.secret)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the line does not say %q: %v", tc.id, w, err)
			}
		}
	}
}

// oidc-provider with the JWT bearer grant registered (server.js): a CI
// issuer's token and a client assertion signed outside shipkey get an
// access token without a refresh token; a stale token is refused in one
// line that says so and names its source.
func TestOpenIDProviderJWTBearer(t *testing.T) {
	t.Parallel()
	p := startOP(t)
	c := opClient(t)
	source := func(mint func() (string, error)) *auth.AssertionSource {
		return &auth.AssertionSource{From: "the test's CI", Fetch: func(context.Context) (string, error) { return mint() }}
	}
	fresh := func() (string, error) { return p.CI.MintAssertion(p.Issuer, "ci-job", time.Minute) }
	stale := func() (string, error) { return p.CI.MintAssertion(p.Issuer, "ci-job", -time.Minute) }
	client := source(func() (string, error) { return p.CI.MintClientAssertion(p.Issuer, time.Minute) })
	conn := auth.Connection{Issuer: p.Issuer, ClientID: p.CI.ClientID, ClientAuth: auth.ClientAssertion}
	r := auth.Request{Conn: conn, ClientAuth: auth.ClientAuth{Method: auth.ClientAssertion, Assertion: client}, Assertion: source(fresh)}
	ts, err := c.Obtain(opCtx(t), auth.GrantJWTBearer, r)
	if err != nil {
		t.Fatal(err)
	}
	if ts.AccessToken == "" || ts.RefreshToken != "" {
		t.Fatalf("token set %+v", ts.Redacted())
	}
	// Issued, not Active: the token lives 2 s, which a loaded machine
	// may take before the check.
	if issued, err := p.Issued(ts.AccessToken); err != nil || !issued {
		t.Fatalf("the provider does not know its token: %v, %v", issued, err)
	}
	r.Assertion = source(stale)
	_, err = c.Obtain(opCtx(t), auth.GrantJWTBearer, r)
	if auth.KindOf(err) != auth.KindAssertionRefused || !strings.Contains(err.Error(), "jwt-bearer: the assertion from the test's CI has expired") {
		t.Fatalf("stale token: %v", err)
	}
}
