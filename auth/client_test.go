package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// cliT0 is the fixed time of the clocks in these tests (whole seconds, as JWT
// exp is).
var cliT0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// cliClock is a settable clock shared by a test server and a client.
type cliClock struct{ off atomic.Int64 }

func (c *cliClock) Now() time.Time          { return cliT0.Add(time.Duration(c.off.Load())) }
func (c *cliClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// cliServer starts an authtest realm with the demo user and client, on clock.
func cliServer(t *testing.T, clock *cliClock, edit func(*authtest.Config)) *authtest.Server {
	t.Helper()
	cfg := authtest.DemoConfig()
	cfg.Now = clock.Now
	if edit != nil {
		edit(&cfg)
	}
	s := authtest.NewServer(cfg)
	t.Cleanup(s.Close)
	return s
}

func cliConn(s *authtest.Server) Connection {
	return Connection{AuthURL: s.URL(), Realm: s.Realm(), ClientID: authtest.DemoClientID}
}

func cliLogin(t *testing.T, c *Client, conn Connection) *TokenSet {
	t.Helper()
	ts, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return ts
}

// cliDemoSafe asserts an error's kind and that it leaks none of the demo
// secrets nor the given tokens.
func cliDemoSafe(t *testing.T, err error, want ErrorKind, tokens ...string) *Error {
	t.Helper()
	return cliSafeErr(t, err, want, append(tokens, authtest.DemoPassword, authtest.DemoClientSecret)...)
}

// cliCapture records the form and Authorization header of every request to
// the wrapped handler.
type cliCapture struct {
	mu    sync.Mutex
	forms []url.Values
	auths []string
	paths []string
}

func (c *cliCapture) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		c.mu.Lock()
		c.forms = append(c.forms, form)
		c.auths = append(c.auths, r.Header.Get("Authorization"))
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *cliCapture) last() (url.Values, string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.forms) - 1
	return c.forms[n], c.auths[n], c.paths[n]
}

func cliKeys(v url.Values) []string {
	var ks []string
	for k := range v {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestClientFormFields(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	var capt cliCapture
	front := httptest.NewServer(capt.wrap(s.Handler()))
	defer front.Close()
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := Connection{AuthURL: front.URL, ClientID: authtest.DemoClientID}

	ts := cliLogin(t, c, conn)
	form, authz, path := capt.last()
	if path != "/auth/realms/master/protocol/openid-connect/token" {
		t.Errorf("token path = %q", path)
	}
	want := url.Values{"client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret},
		"grant_type": {"password"}, "username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}}
	if fmt.Sprint(form) != fmt.Sprint(want) || authz != "" {
		t.Errorf("password form = %v (Authorization %q), want exactly %v", form, authz, want)
	}

	if _, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts); err != nil {
		t.Fatal(err)
	}
	form, authz, _ = capt.last()
	want = url.Values{"client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret},
		"grant_type": {"refresh_token"}, "refresh_token": {ts.RefreshToken}}
	if fmt.Sprint(form) != fmt.Sprint(want) || authz != "" {
		t.Errorf("refresh form = %v, want exactly %v", cliKeys(form), cliKeys(want))
	}

	// Scopes add exactly one field.
	conn.Scopes = []string{"openid", "write"}
	ts = cliLogin(t, c, conn)
	form, _, _ = capt.last()
	if form.Get("scope") != "openid write" || len(form) != 6 {
		t.Errorf("scoped form keys = %v scope=%q", cliKeys(form), form.Get("scope"))
	}
	if ts.IDToken == "" || !strings.Contains(ts.Scope, "openid") || !strings.Contains(ts.Scope, "write") {
		t.Errorf("openid scope: id_token %v, scope %q", ts.IDToken != "", ts.Scope)
	}

	// BasicAuth moves the client credentials to the header.
	conn.Scopes = nil
	conn.BasicAuth = true
	ts = cliLogin(t, c, conn)
	form, authz, _ = capt.last()
	if form.Has("client_id") || form.Has("client_secret") || !strings.HasPrefix(authz, "Basic ") {
		t.Errorf("basic auth: form %v, Authorization %q", cliKeys(form), authz)
	}
	if _, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts); err != nil {
		t.Fatalf("refresh with basic auth: %v", err)
	}
	if err := c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.RefreshToken); err != nil {
		t.Fatalf("logout with basic auth: %v", err)
	}
	form, authz, path = capt.last()
	if !strings.HasSuffix(path, "/logout") || form.Has("client_secret") || authz == "" || form.Get("refresh_token") != ts.RefreshToken {
		t.Errorf("basic logout: %s %v %q", path, cliKeys(form), authz)
	}
}

func TestClientLoginTokenSet(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	ts := cliLogin(t, c, cliConn(s))

	if strings.Count(ts.AccessToken, ".") != 2 || ts.RefreshToken == "" || ts.TokenType != "Bearer" {
		t.Fatalf("tokens: type %q, access JWT %v, refresh %v", ts.TokenType, strings.Count(ts.AccessToken, ".") == 2, ts.RefreshToken != "")
	}
	if ts.ExpiresIn != 1314000 || ts.RefreshExpiresIn != 1800 || ts.SessionState == "" || ts.Scope != "email profile write" {
		t.Errorf("fields: %+v", ts.Redacted())
	}
	if ts.IDToken != "" {
		t.Errorf("id_token without openid scope")
	}
	if !ts.ObtainedAt.Equal(cliT0) ||
		!ts.AccessExpiresAt.Equal(cliT0.Add(1314000*time.Second)) ||
		!ts.RefreshExpiresAt.Equal(cliT0.Add(1800*time.Second)) ||
		!ts.JWTExpiresAt.Equal(cliT0.Add(1314000*time.Second)) {
		t.Errorf("times: %+v", ts.Redacted())
	}
	if d, skewed := ts.Skew(); skewed || d != 0 {
		t.Errorf("skew %v %v with agreeing clocks", d, skewed)
	}
	// The access token outlives the refresh token, and nothing breaks.
	later := cliT0.Add(31 * time.Minute)
	if !ts.AccessValid(later) || ts.RefreshValid(later) || !ts.RefreshValid(cliT0) {
		t.Errorf("validity at +31m: access %v refresh %v", ts.AccessValid(later), ts.RefreshValid(later))
	}
}

func TestClientNoRefreshExpiry(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, func(c *authtest.Config) { c.RefreshTTL = -1 })
	c := cliNewClient(t, Options{Now: clock.Now})
	ts := cliLogin(t, c, cliConn(s))
	if ts.RefreshExpiresIn != 0 || !ts.RefreshExpiresAt.IsZero() || !ts.RefreshValid(cliT0.Add(1000*time.Hour)) {
		t.Fatalf("refresh_expires_in 0: %+v", ts.Redacted())
	}
	clock.Advance(48 * time.Hour)
	next, err := c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
	if err != nil || !next.RefreshExpiresAt.IsZero() {
		t.Fatalf("refresh: %v", err)
	}
}

func TestClientRefreshRotation(t *testing.T) {
	t.Parallel()
	t.Run("new refresh token replaces the old", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, nil)
		c := cliNewClient(t, Options{Now: clock.Now})
		ts := cliLogin(t, c, cliConn(s))
		clock.Advance(10 * time.Minute)
		next, err := c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		if err != nil {
			t.Fatal(err)
		}
		if next.RefreshToken == ts.RefreshToken || next.AccessToken == ts.AccessToken {
			t.Fatal("refresh did not return new tokens")
		}
		if !next.ObtainedAt.Equal(cliT0.Add(10*time.Minute)) || !next.RefreshExpiresAt.Equal(next.ObtainedAt.Add(30*time.Minute)) {
			t.Errorf("times after refresh: %+v", next.Redacted())
		}
		if next.SessionState != ts.SessionState {
			t.Errorf("session changed on refresh")
		}
	})
	t.Run("reuse with rotation is login required", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, func(c *authtest.Config) { c.RevokeRefreshToken = true })
		c := cliNewClient(t, Options{Now: clock.Now})
		ts := cliLogin(t, c, cliConn(s))
		next, err := c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		cliDemoSafe(t, err, KindLoginRequired, ts.RefreshToken, ts.AccessToken, next.RefreshToken, next.AccessToken)
	})
	t.Run("no rotation keeps the old token and its expiry", func(t *testing.T) {
		srv := httptest.NewServer(cliJSON(200, `{"access_token":"new-access","token_type":"Bearer","expires_in":300,"refresh_expires_in":1800}`))
		defer srv.Close()
		c := cliNewClient(t, Options{Now: func() time.Time { return cliT0.Add(time.Hour) }})
		prev := &TokenSet{AccessToken: "old-access", RefreshToken: "old-refresh", RefreshExpiresIn: 86400,
			RefreshExpiresAt: cliT0.Add(24 * time.Hour), Scope: "email", SessionState: "sid-1"}
		next, err := c.Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, prev)
		if err != nil {
			t.Fatal(err)
		}
		if next.AccessToken != "new-access" || next.RefreshToken != "old-refresh" ||
			!next.RefreshExpiresAt.Equal(prev.RefreshExpiresAt) || next.RefreshExpiresIn != 86400 ||
			next.Scope != "email" || next.SessionState != "sid-1" || !next.AccessExpiresAt.Equal(cliT0.Add(time.Hour+300*time.Second)) {
			t.Fatalf("no-rotation result: %+v", next)
		}
	})
	t.Run("no refresh token", func(t *testing.T) {
		c := cliNewClient(t, Options{})
		_, err := c.Refresh(cliCtx(t), cliTokenConn("http://127.0.0.1:1"), ClientAuth{Secret: cliClientSecret}, &TokenSet{AccessToken: cliAccess})
		cliSafeErr(t, err, KindLoginRequired)
	})
}

// TestClientErrorsAgainstRealm provokes every server-side failure with the
// Keycloak-compatible test server.
func TestClientErrorsAgainstRealm(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, func(c *authtest.Config) {
		c.Users = append(c.Users,
			authtest.User{Username: "off", Password: "off-password-1", Disabled: true},
			authtest.User{Username: "new", Password: "new-password-1", RequiredActions: true})
		c.Clients = append(c.Clients,
			authtest.Client{ID: "nodirect", Secret: "nodirect-secret-1", NoDirectAccessGrant: true},
			authtest.Client{ID: "disabled", Secret: "disabled-secret-1", Disabled: true})
	})
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := cliConn(s)
	login := func(conn Connection, secret, user, pass string) error {
		_, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: secret}, user, pass)
		return err
	}
	with := func(id string) Connection { cc := conn; cc.ClientID = id; return cc }
	cases := []struct {
		name string
		err  error
		want ErrorKind
	}{
		{"wrong password", login(conn, authtest.DemoClientSecret, authtest.DemoUsername, "wrong-password-xyz"), KindInvalidCredentials},
		{"unknown user", login(conn, authtest.DemoClientSecret, "nobody", authtest.DemoPassword), KindInvalidCredentials},
		{"wrong client secret", login(conn, "wrong-secret-xyz", authtest.DemoUsername, authtest.DemoPassword), KindInvalidClient},
		{"unknown client", login(with("nope"), authtest.DemoClientSecret, authtest.DemoUsername, authtest.DemoPassword), KindInvalidClient},
		{"disabled client", login(with("disabled"), "disabled-secret-1", authtest.DemoUsername, authtest.DemoPassword), KindInvalidClient},
		{"disabled account", login(conn, authtest.DemoClientSecret, "off", "off-password-1"), KindAccountDisabled},
		{"not set up", login(conn, authtest.DemoClientSecret, "new", "new-password-1"), KindAccountNotSetUp},
		{"direct grants off", login(with("nodirect"), "nodirect-secret-1", authtest.DemoUsername, authtest.DemoPassword), KindDirectGrantDisabled},
		{"invalid scope", func() error {
			cc := conn
			cc.Scopes = []string{"bogus"}
			return login(cc, authtest.DemoClientSecret, authtest.DemoUsername, authtest.DemoPassword)
		}(), KindInvalidScope},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cliDemoSafe(t, tc.err, tc.want, "wrong-password-xyz", "wrong-secret-xyz", "off-password-1", "new-password-1", "nodirect-secret-1", "disabled-secret-1")
		})
	}

	t.Run("expired refresh", func(t *testing.T) {
		ts := cliLogin(t, c, conn)
		clock.Advance(31 * time.Minute)
		_, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		cliDemoSafe(t, err, KindLoginRequired, ts.AccessToken, ts.RefreshToken)
	})
	t.Run("ended session", func(t *testing.T) {
		ts := cliLogin(t, c, conn)
		s.EndSessions()
		_, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		cliDemoSafe(t, err, KindLoginRequired, ts.AccessToken, ts.RefreshToken)
	})
	t.Run("garbage refresh token", func(t *testing.T) {
		_, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, &TokenSet{RefreshToken: cliRefresh})
		cliDemoSafe(t, err, KindLoginRequired)
	})
}

// TestClientFaults injects transport and server faults into the test realm.
func TestClientFaults(t *testing.T) {
	t.Parallel()
	hostile := `{"error":"invalid_grant","error_description":"no \u001b]52;c;SGVsbG8=\u0007 way \u001b[2J"}`
	cases := []struct {
		name  string
		fault authtest.Fault
		want  ErrorKind
	}{
		{"500 with body", authtest.Fault{Status: 500, Body: "<html><body>Internal Server Error</body></html>"}, KindServer},
		{"503", authtest.Fault{Status: 503}, KindServer},
		{"502 json", authtest.Fault{Status: 502, Body: `{"error":"bad_gateway"}`}, KindServer},
		{"malformed", authtest.Fault{Malformed: true}, KindMalformedResponse},
		{"huge", authtest.Fault{Huge: true}, KindMalformedResponse},
		{"dropped", authtest.Fault{Drop: true}, KindNetwork},
		{"timeout", authtest.Fault{Delay: 3 * time.Second}, KindTimeout},
		{"hostile description", authtest.Fault{Status: 401, Body: hostile}, KindInvalidCredentials},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &cliClock{}
			s := cliServer(t, clock, nil)
			ts := cliLogin(t, cliNewClient(t, Options{Now: clock.Now}), cliConn(s))
			timeout := cliTimeout
			if tc.fault.Delay > 0 {
				timeout = 200 * time.Millisecond
			}
			c := cliNewClient(t, Options{Now: clock.Now, Timeout: timeout})
			tc.fault.Endpoint = "token"
			tc.fault.Times = 2
			s.Inject(tc.fault)
			_, err := c.Login(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
			e := cliDemoSafe(t, err, tc.want, ts.AccessToken, ts.RefreshToken)
			if e.Op != "login" {
				t.Errorf("op = %q", e.Op)
			}
			want := tc.want
			if tc.name == "hostile description" {
				want = KindLoginRequired // invalid_grant on refresh
				if msg := err.Error(); !strings.Contains(msg, `\x1b]52;c;`) || !strings.Contains(msg, `\x1b[2J`) {
					t.Errorf("escapes not shown escaped: %s", msg)
				}
			}
			_, err = c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
			cliDemoSafe(t, err, want, ts.AccessToken, ts.RefreshToken)
			if got := s.Count("token"); got != 3 {
				t.Errorf("token requests = %d, want 3 (no retries)", got)
			}
		})
	}
}

func TestClientDiscovery(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})

	t.Run("issuer only", func(t *testing.T) {
		conn := Connection{ClientID: authtest.DemoClientID, Issuer: s.Issuer()}
		ep, err := c.Endpoints(cliCtx(t), conn)
		if err != nil {
			t.Fatal(err)
		}
		oidc := s.Issuer() + "/protocol/openid-connect"
		want := Endpoints{Issuer: s.Issuer(), Token: oidc + "/token", JWKS: oidc + "/certs", Logout: oidc + "/logout",
			Userinfo: oidc + "/userinfo", Introspection: oidc + "/token/introspect", Revocation: oidc + "/revoke",
			Authorization: oidc + "/auth", DeviceAuthorization: oidc + "/auth/device", IssParameter: true,
			PAR:             oidc + "/ext/par/request",
			ScopesSupported: "openid email profile write offline_access roles"}
		if ep != want {
			t.Fatalf("endpoints = %+v\nwant %+v", ep, want)
		}
		ts := cliLogin(t, c, conn)
		cliLogin(t, c, conn)
		if n := s.Count("discovery"); n != 1 {
			t.Errorf("discovery fetched %d times, want 1 (cached)", n)
		}
		if err := c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.RefreshToken); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("issuer only, discovery fails", func(t *testing.T) {
		s.Inject(authtest.Fault{Endpoint: "discovery", Status: 404, Body: `{"error":"not found"}`})
		fresh := cliNewClient(t, Options{})
		_, err := fresh.Login(cliCtx(t), Connection{ClientID: authtest.DemoClientID, Issuer: s.Issuer()}, ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
		cliDemoSafe(t, err, KindServer)
	})
	t.Run("auth url, discovery fails: keycloak paths", func(t *testing.T) {
		s.Inject(authtest.Fault{Endpoint: "discovery", Status: 500})
		fresh := cliNewClient(t, Options{})
		ep, err := fresh.Endpoints(cliCtx(t), cliConn(s))
		if err != nil || ep != cliConn(s).KeycloakEndpoints() {
			t.Fatalf("fallback: %+v %v", ep, err)
		}
	})
	t.Run("token url override", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + ln.Addr().String()
		ln.Close()
		conn := Connection{AuthURL: dead, ClientID: authtest.DemoClientID, TokenURL: s.URL() + "/auth/realms/master/protocol/openid-connect/token"}
		cliLogin(t, c, conn)
		ep, err := c.Endpoints(cliCtx(t), conn)
		if err != nil || ep.Token != conn.TokenURL || ep.Logout != dead+"/auth/realms/master/protocol/openid-connect/logout" {
			t.Fatalf("override: %+v %v", ep, err)
		}
	})
	t.Run("discovered urls are checked", func(t *testing.T) {
		var doc atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cliJSON(200, doc.Load().(string))(w, r)
		}))
		defer srv.Close()
		doc.Store(`{"issuer":"` + srv.URL + `","token_endpoint":"` + srv.URL + `/token","userinfo_endpoint":"http://evil.example.com/u","jwks_uri":"ftp://x/y"}`)
		ep, err := cliNewClient(t, Options{}).Endpoints(cliCtx(t), Connection{ClientID: "x", Issuer: srv.URL})
		if err != nil || ep.Token != srv.URL+"/token" || ep.Userinfo != "" || ep.JWKS != "" || ep.Revocation != "" {
			t.Fatalf("checked endpoints: %+v %v", ep, err)
		}
		// No revocation endpoint advertised: Revoke is not supported.
		err = cliNewClient(t, Options{}).Revoke(cliCtx(t), Connection{ClientID: "x", Issuer: srv.URL}, ClientAuth{Secret: cliClientSecret}, cliAccess, "access_token")
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("revoke without endpoint: %v", err)
		}
		doc.Store(`{"token_endpoint":"http://evil.example.com/token"}`)
		_, err = cliNewClient(t, Options{}).Login(cliCtx(t), Connection{ClientID: "x", Issuer: srv.URL}, ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindConfig)
		doc.Store(`not json`)
		_, err = cliNewClient(t, Options{}).Endpoints(cliCtx(t), Connection{ClientID: "x", Issuer: srv.URL})
		cliSafeErr(t, err, KindMalformedResponse)
	})
	t.Run("concurrent", func(t *testing.T) {
		fresh := cliNewClient(t, Options{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if _, err := fresh.Endpoints(cliCtx(t), Connection{ClientID: "x", Issuer: s.Issuer()}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
}

func TestClientLogout(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := cliConn(s)
	ts := cliLogin(t, c, conn)
	if err := c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.RefreshToken); err != nil {
		t.Fatalf("logout: %v", err)
	}
	_, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts)
	cliDemoSafe(t, err, KindLoginRequired, ts.AccessToken, ts.RefreshToken)

	// Refusals are *Error with the server's words, sanitized.
	err = c.Logout(cliCtx(t), conn, ClientAuth{Secret: "wrong-secret-xyz"}, ts.RefreshToken)
	cliDemoSafe(t, err, KindInvalidClient, "wrong-secret-xyz", ts.RefreshToken)
	err = c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, cliRefresh)
	if KindOf(err) != KindLoginRequired && KindOf(err) != KindServer {
		t.Errorf("logout with a garbage token: %v", err)
	}
	cliDemoSafe(t, err, KindOf(err))
	s.Inject(authtest.Fault{Endpoint: "logout", Status: 500, Body: "down \x1b[2J"})
	e := cliDemoSafe(t, c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.RefreshToken), KindServer)
	if e.Op != "logout" || e.Status != 500 {
		t.Errorf("logout error: %+v", e)
	}
}

func TestClientRevoke(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := cliConn(s)
	ts := cliLogin(t, c, conn)
	var capt cliCapture
	front := httptest.NewServer(capt.wrap(s.Handler()))
	defer front.Close()
	fconn := Connection{AuthURL: front.URL, ClientID: authtest.DemoClientID}
	if err := c.Revoke(cliCtx(t), fconn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken, "access_token"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	form, _, path := capt.last()
	if !strings.HasSuffix(path, "/revoke") || form.Get("token") != ts.AccessToken || form.Get("token_type_hint") != "access_token" ||
		form.Get("client_id") != authtest.DemoClientID || form.Get("client_secret") != authtest.DemoClientSecret {
		t.Errorf("revoke request %s %v", path, cliKeys(form))
	}
	if l := c.Liveness(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveInactive {
		t.Errorf("liveness after revoke = %+v", l)
	}
	err := c.Revoke(cliCtx(t), conn, ClientAuth{Secret: "wrong-secret-xyz"}, ts.RefreshToken, "refresh_token")
	cliDemoSafe(t, err, KindInvalidClient, "wrong-secret-xyz", ts.RefreshToken, ts.AccessToken)
}

func TestClientLiveness(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	conn := cliConn(s)
	ts := cliLogin(t, c, conn)
	ctx := cliCtx(t)

	if l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveActive || l.Via.String() != "introspection" {
		t.Fatalf("fresh token: %+v", l)
	}
	// Introspection unavailable: userinfo answers.
	s.Inject(authtest.Fault{Endpoint: "introspect", Status: 403})
	if l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveActive || l.Via.String() != "userinfo" {
		t.Fatalf("via userinfo: %+v", l)
	}
	s.EndSessions()
	if l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveInactive || l.Via.String() != "introspection" || l.Reason.String() == "" {
		t.Fatalf("ended session: %+v", l)
	}
	// A userinfo refusal never says "ended": userinfo also refuses live
	// tokens (no openid scope), so it is "cannot tell" with a reason.
	s.Inject(authtest.Fault{Endpoint: "introspect", Status: 404})
	if l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveUnknown || l.Via.String() != "userinfo" || !strings.Contains(l.Reason.String(), "openid") {
		t.Fatalf("ended session via userinfo: %+v", l)
	}
	// Odd answers are LiveUnknown with a safe reason.
	s.Inject(authtest.Fault{Endpoint: "introspect", Status: 500, Body: "boom \x1b[2J " + ts.AccessToken})
	l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken)
	if l.State != LiveUnknown || l.Reason.String() == "" || strings.Contains(l.Reason.String(), ts.AccessToken) || strings.ContainsRune(l.Reason.String(), 0x1b) {
		t.Fatalf("server error: %+v", l)
	}
	s.Inject(authtest.Fault{Endpoint: "introspect", Malformed: true})
	if l := c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken); l.State != LiveUnknown {
		t.Fatalf("malformed: %+v", l)
	}
	s.Close()
	l = c.Liveness(ctx, conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken)
	if l.State != LiveUnknown || l.Reason.String() == "" || strings.Contains(l.Reason.String(), authtest.DemoClientSecret) || strings.Contains(l.Reason.String(), ts.AccessToken) {
		t.Fatalf("server down: %+v", l)
	}
	if l.State.String() != "cannot tell" {
		t.Errorf("state string %q", l.State.String())
	}
}

// TestClientSkew: a token whose exp disagrees with expires_in shows up in Skew.
func TestClientSkew(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	// The client's clock runs 5 minutes behind the server's.
	c := cliNewClient(t, Options{Now: func() time.Time { return clock.Now().Add(-5 * time.Minute) }})
	ts := cliLogin(t, c, cliConn(s))
	d, skewed := ts.Skew()
	if !skewed || d != 5*time.Minute {
		t.Fatalf("skew = %v %v, want 5m true", d, skewed)
	}

	// A server whose JWT exp says 1 hour while expires_in says 300 s.
	exp := cliT0.Add(time.Hour).Unix()
	jwt := "eyJhbGciOiJSUzI1NiJ9." + cliB64(fmt.Sprintf(`{"exp":%d}`, exp)) + ".c2ln"
	srv := httptest.NewServer(cliJSON(200, `{"access_token":"`+jwt+`","token_type":"Bearer","expires_in":"300","refresh_expires_in":1800.0,"not-before-policy":1700000000,"session_state":"s1","scope":"email profile"}`))
	defer srv.Close()
	c2 := cliNewClient(t, Options{Now: func() time.Time { return cliT0 }})
	ts, err := c2.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
	if err != nil {
		t.Fatal(err)
	}
	if d, skewed := ts.Skew(); !skewed || d != 55*time.Minute {
		t.Errorf("skew = %v %v", d, skewed)
	}
	if ts.ExpiresIn != 300 || ts.RefreshExpiresIn != 1800 || ts.NotBeforePolicy == nil || *ts.NotBeforePolicy != 1700000000 || !ts.AccessExpiry().Equal(cliT0.Add(300*time.Second)) {
		t.Errorf("numbers: %+v", ts.Redacted())
	}
}

// TestClientLogsNoSecrets: the debug log has method, URL and status only.
func TestClientLogsNoSecrets(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	var buf bytes.Buffer
	var mu sync.Mutex
	c := cliNewClient(t, Options{Now: clock.Now, Logger: cliSlog(&buf, &mu)})
	conn := cliConn(s)
	ts := cliLogin(t, c, conn)
	if _, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts); err != nil {
		t.Fatal(err)
	}
	c.Liveness(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken)
	_ = c.Logout(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts.RefreshToken)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, "status=200") || !strings.Contains(out, "method=POST") {
		t.Fatalf("log lacks request lines:\n%s", out)
	}
	for _, sec := range []string{authtest.DemoPassword, authtest.DemoClientSecret, ts.AccessToken, ts.RefreshToken} {
		if strings.Contains(out, sec) {
			t.Fatalf("log leaks a secret")
		}
	}
}

// TestClientConfigErrors: a bad connection fails before anything is sent.
func TestClientConfigErrors(t *testing.T) {
	t.Parallel()
	c := cliNewClient(t, Options{})
	for _, conn := range []Connection{
		{AuthURL: "https://auth.example.com"},                      // no client id
		{ClientID: "x"},                                            // no URL
		{ClientID: "x", AuthURL: "ftp://auth.example.com"},         // not http(s)
		{ClientID: "x", AuthURL: "https://u:p@auth.example.com"},   // credentials in URL
		{ClientID: "x", TokenURL: "http://auth.example.com/token"}, // plain http, remote
	} {
		_, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		cliSafeErr(t, err, KindConfig)
		if l := c.Liveness(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, cliAccess); l.State != LiveUnknown {
			t.Errorf("liveness of a bad connection: %+v", l)
		}
		if err := c.Revoke(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, cliAccess, ""); KindOf(err) != KindConfig {
			t.Errorf("revoke of a bad connection: %v", err)
		}
	}
	_, err := c.Login(cliCtx(t), Connection{ClientID: "x", AuthURL: "http://127.0.0.1:1"}, ClientAuth{Secret: cliClientSecret}, "", cliPassword)
	cliSafeErr(t, err, KindInvalidCredentials)
}

// cliLockedWriter serializes writes of concurrent log lines.
type cliLockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l cliLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func cliSlog(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(cliLockedWriter{w, mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
