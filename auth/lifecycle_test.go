package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// openidConn is the demo connection asking for the openid scope.
func openidConn(s *authtest.Server) Connection {
	conn := cliConn(s)
	conn.Scopes = []string{"openid"}
	return conn
}

// TestLivenessUserinfoRefusalIsNotEnded: on a server without introspection
// whose userinfo demands the openid scope, a live token without openid is
// "cannot tell" with a reason naming the scope, never "ended"; with openid
// userinfo says active. Only introspection's active:false says ended.
// Keycloak's introspection path, absent from discovery, is asked first
// (TestLivenessAtKeycloaksIntrospectionPath) and its 404 falls through.
func TestLivenessUserinfoRefusalIsNotEnded(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, func(c *authtest.Config) { c.NoIntrospection, c.UserinfoRequiresOpenID = true, true })
	c := cliNewClient(t, Options{Now: clock.Now})

	ts := cliLogin(t, c, cliConn(s))
	l := c.Liveness(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts.AccessToken)
	if l.State != LiveUnknown || l.Via.String() != "userinfo" || !strings.Contains(l.Reason.String(), "openid") {
		t.Fatalf("live token without openid: %+v", l)
	}
	// One flat sentence: the server's words after a colon, no parentheses.
	if d := l.Detail(); !strings.HasPrefix(d.String(), "userinfo refused the token with status 401, perhaps for want of the openid scope; the server said: ") ||
		strings.ContainsAny(d.String(), "()") || l.Said.String() == "" {
		t.Errorf("detail %q", d)
	}
	if n := s.Count("introspect"); n != 1 {
		t.Errorf("Keycloak's introspection path (not in discovery, 404 here) asked %d times, want once before userinfo", n)
	}
	// The server's own view: the session is alive and a refresh works.
	if _, err := c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts); err != nil {
		t.Fatalf("refresh of the 'cannot tell' session: %v", err)
	}

	ts2, err := c.Login(cliCtx(t), openidConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Liveness(cliCtx(t), openidConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts2.AccessToken); l.State != LiveActive || l.Via.String() != "userinfo" {
		t.Fatalf("openid token: %+v", l)
	}
}

// TestLivenessUsesDiscoveredIntrospection: introspection is asked where
// discovery says, and only its active:false is "not active".
func TestLivenessUsesDiscoveredIntrospection(t *testing.T) {
	t.Parallel()
	var introspected int
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q,"introspection_endpoint":%q}`, base, base+"/token", base+"/oauth/introspect")
	})
	mux.HandleFunc("/oauth/introspect", func(w http.ResponseWriter, r *http.Request) {
		introspected++
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"active": false})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	c := cliNewClient(t, Options{})
	l := c.Liveness(cliCtx(t), Connection{ClientID: "x", Issuer: srv.URL}, ClientAuth{Secret: cliClientSecret}, cliAccess)
	if l.State != LiveInactive || l.Via.String() != "introspection" || introspected != 1 {
		t.Fatalf("liveness %+v after %d introspections", l, introspected)
	}
}

// TestEndSessionEveryServer: EndSession ends the session with whatever the
// server offers, and the server agrees: the old refresh token no longer
// works there.
func TestEndSessionEveryServer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		edit      func(*authtest.Config)
		discovery bool // false: discovery fails, Keycloak's paths are guessed
		via       string
		logouts   int
		revokes   int
	}{
		{"keycloak logout", nil, true, "logout", 1, 0},
		{"advertised revocation only", func(c *authtest.Config) { c.NoLogout, c.RevocationPath = true, "/revoke" }, true, "revocation", 0, 2},
		{"no logout, keycloak revoke path", func(c *authtest.Config) { c.NoLogout = true }, true, "revocation", 0, 2},
		{"no discovery: keycloak logout 404, keycloak revoke", func(c *authtest.Config) { c.NoLogout = true }, false, "revocation", 1, 2},
		{"opaque refresh tokens", func(c *authtest.Config) { c.NoLogout, c.OpaqueRefreshTokens = true, true }, true, "revocation", 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &cliClock{}
			s := cliServer(t, clock, tc.edit)
			c := cliNewClient(t, Options{Now: clock.Now})
			ts := cliLogin(t, c, cliConn(s))
			if !tc.discovery {
				s.Inject(authtest.Fault{Endpoint: "discovery", Status: 404, Times: 10})
				c = cliNewClient(t, Options{Now: clock.Now})
			}
			if s.Sessions() != 1 || !s.RefreshAccepted(ts.RefreshToken) {
				t.Fatal("no live session before the logout")
			}
			res, err := c.EndSession(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
			if err != nil {
				t.Fatalf("EndSession: %v", err)
			}
			if res.Via != tc.via || res.AlreadyEnded || !res.Ended() {
				t.Errorf("result %+v, want via %s", res, tc.via)
			}
			if got := s.Count("logout"); got != tc.logouts {
				t.Errorf("logout requests %d, want %d", got, tc.logouts)
			}
			if got := s.Count("revoke"); got != tc.revokes {
				t.Errorf("revoke requests %d, want %d", got, tc.revokes)
			}
			if s.Sessions() != 0 || s.RefreshAccepted(ts.RefreshToken) {
				t.Errorf("the server still holds the session")
			}
			_, err = c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
			cliDemoSafe(t, err, KindLoginRequired, ts.RefreshToken, ts.AccessToken)
		})
	}
}

// TestEndSessionNoWayOrRefused: zero result and nil error when the server
// offers no way to end a session; an error only when it refused or could not
// be reached.
func TestEndSessionNoWayOrRefused(t *testing.T) {
	t.Parallel()
	ts := &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh}
	t.Run("discovery names neither logout nor revocation, nothing at keycloak's paths", func(t *testing.T) {
		var posts int
		var base string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
				fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q}`, base, base+"/token")
				return
			}
			posts++
			http.NotFound(w, r)
		}))
		defer srv.Close()
		conn := Connection{AuthURL: srv.URL, ClientID: "x"}
		base = conn.RealmURL()
		res, err := cliNewClient(t, Options{}).EndSession(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, ts)
		if err != nil || res != (EndResult{}) {
			t.Fatalf("got %+v, %v; want zero and nil", res, err)
		}
		if posts != 1 {
			t.Errorf("%d posts, want 1 (Keycloak's revoke path, then give up)", posts)
		}
	})
	t.Run("no discovery, nothing at keycloak's logout or revoke paths", func(t *testing.T) {
		var posts int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				posts++
			}
			http.NotFound(w, r)
		}))
		defer srv.Close()
		conn := Connection{AuthURL: srv.URL, ClientID: "x"}
		res, err := cliNewClient(t, Options{}).EndSession(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, ts)
		if err != nil || res != (EndResult{}) {
			t.Fatalf("got %+v, %v; want zero and nil", res, err)
		}
		if posts != 2 {
			t.Errorf("%d posts, want 2 (Keycloak's logout path, its revoke path, then give up)", posts)
		}
	})
	t.Run("only a token URL", func(t *testing.T) {
		res, err := cliNewClient(t, Options{}).EndSession(cliCtx(t), Connection{ClientID: "x", TokenURL: "http://127.0.0.1:1/token"}, ClientAuth{Secret: cliClientSecret}, ts)
		if err != nil || res.Ended() {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
	t.Run("revocation refused", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, func(c *authtest.Config) { c.NoLogout = true })
		c := cliNewClient(t, Options{Now: clock.Now})
		real := cliLogin(t, c, cliConn(s))
		_, err := c.EndSession(cliCtx(t), cliConn(s), ClientAuth{Secret: "wrong-secret-xyz"}, real)
		cliDemoSafe(t, err, KindInvalidClient, real.RefreshToken, real.AccessToken, "wrong-secret-xyz")
	})
	t.Run("logout refused", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, nil)
		c := cliNewClient(t, Options{Now: clock.Now})
		real := cliLogin(t, c, cliConn(s))
		s.Inject(authtest.Fault{Endpoint: "logout", Status: 500})
		_, err := c.EndSession(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, real)
		cliDemoSafe(t, err, KindServer, real.RefreshToken, real.AccessToken)
	})
	t.Run("unreachable", func(t *testing.T) {
		_, err := cliNewClient(t, Options{}).EndSession(cliCtx(t), Connection{AuthURL: "http://127.0.0.1:1", ClientID: "x"}, ClientAuth{Secret: cliClientSecret}, ts)
		cliSafeErr(t, err, KindNetwork)
	})
	t.Run("already ended", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, nil)
		c := cliNewClient(t, Options{Now: clock.Now})
		real := cliLogin(t, c, cliConn(s))
		s.Inject(authtest.Fault{Endpoint: "logout", Status: 400, Body: `{"error":"invalid_grant","error_description":"Session not active"}`})
		res, err := c.EndSession(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, real)
		if err != nil || !res.AlreadyEnded || res.Via != "logout" {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
}

// TestVerifyUsesDiscoveredJWKS: a server whose jwks_uri is not Keycloak's
// certs path still gets its signatures verified.
func TestVerifyUsesDiscoveredJWKS(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, func(c *authtest.Config) { c.JWKSPath = "/jwks" })
	c := cliNewClient(t, Options{Now: clock.Now})
	ts := cliLogin(t, c, cliConn(s))
	v := c.Verify(cliCtx(t), []Connection{cliConn(s)}, ts.AccessToken)
	if v.State != SigVerified {
		t.Fatalf("verify: %+v", v)
	}
	if s.Count("certs") != 1 {
		t.Errorf("JWKS fetched %d times", s.Count("certs"))
	}
}

// TestRefreshExpirySource: the refresh token's expiry says where it came
// from, and nothing is invented when the server said nothing.
func TestRefreshExpirySource(t *testing.T) {
	t.Parallel()
	t.Run("keycloak: response", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, nil)
		ts := cliLogin(t, cliNewClient(t, Options{Now: clock.Now}), cliConn(s))
		if ts.RefreshExpirySource != RefreshExpiryResponse || !ts.RefreshExpiresAt.Equal(cliT0.Add(30*time.Minute)) {
			t.Errorf("%q %v", ts.RefreshExpirySource, ts.RefreshExpiresAt)
		}
		if ts.NotBeforePolicy == nil || *ts.NotBeforePolicy != 0 {
			t.Errorf("not-before-policy sent as 0 must be kept: %v", ts.NotBeforePolicy)
		}
	})
	t.Run("refresh_expires_in 0: offline", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, func(c *authtest.Config) { c.RefreshTTL = -1 })
		ts := cliLogin(t, cliNewClient(t, Options{Now: clock.Now}), cliConn(s))
		if ts.RefreshExpirySource != RefreshExpiryOffline || !ts.RefreshExpiresAt.IsZero() {
			t.Errorf("%q %v", ts.RefreshExpirySource, ts.RefreshExpiresAt)
		}
	})
	t.Run("opaque, not stated", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, func(c *authtest.Config) { c.OpaqueRefreshTokens = true })
		ts := cliLogin(t, cliNewClient(t, Options{Now: clock.Now}), cliConn(s))
		if ts.RefreshExpirySource != RefreshExpiryUnstated || !ts.RefreshExpiresAt.IsZero() || ts.RefreshToken == "" {
			t.Errorf("%q %v", ts.RefreshExpirySource, ts.RefreshExpiresAt)
		}
	})
	t.Run("JWT refresh token without refresh_expires_in", func(t *testing.T) {
		exp := cliT0.Add(2 * time.Hour)
		srv := httptest.NewServer(cliJSON(200, `{"access_token":"abc","token_type":"Bearer","expires_in":300,"refresh_token":"`+hostileJWT(exp)+`"}`))
		defer srv.Close()
		ts, err := cliNewClient(t, Options{Now: func() time.Time { return cliT0 }}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		if err != nil {
			t.Fatal(err)
		}
		if ts.RefreshExpirySource != RefreshExpiryJWT || !ts.RefreshExpiresAt.Equal(exp) || ts.NotBeforePolicy != nil {
			t.Errorf("%q %v nbp %v", ts.RefreshExpirySource, ts.RefreshExpiresAt, ts.NotBeforePolicy)
		}
		data, _ := json.Marshal(ts.Redacted())
		if strings.Contains(string(data), "not-before-policy") {
			t.Errorf("an absent not-before-policy is written: %s", data)
		}
	})
	t.Run("unrotated refresh keeps the source", func(t *testing.T) {
		clock := &cliClock{}
		s := cliServer(t, clock, func(c *authtest.Config) { c.NoRefreshRotation = true })
		c := cliNewClient(t, Options{Now: clock.Now})
		ts := cliLogin(t, c, cliConn(s))
		clock.Advance(time.Minute)
		next, err := c.Refresh(cliCtx(t), cliConn(s), ClientAuth{Secret: authtest.DemoClientSecret}, ts)
		if err != nil {
			t.Fatal(err)
		}
		if next.RefreshToken != ts.RefreshToken || next.RefreshExpirySource != RefreshExpiryResponse || !next.RefreshExpiresAt.Equal(ts.RefreshExpiresAt) {
			t.Errorf("unrotated: %+v", next.Redacted())
		}
	})
}

// TestProfilesLoginRefresh: login and refresh work against every authtest
// profile (scope-required needs a scope on the connection).
func TestProfilesLoginRefresh(t *testing.T) {
	t.Parallel()
	for _, p := range authtest.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			clock := &cliClock{}
			s := cliServer(t, clock, p.Apply)
			c := cliNewClient(t, Options{Now: clock.Now})
			conn := openidConn(s)
			ts, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			clock.Advance(time.Minute)
			if _, err := c.Refresh(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, ts); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			// Wrong password: a refusal of the right kind whatever the body.
			_, err = c.Login(cliCtx(t), conn, ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, "wrong-password-x")
			want := KindInvalidCredentials
			if k := KindOf(err); k == KindCredentialsRefused {
				want = k
			}
			cliDemoSafe(t, err, want, "wrong-password-x")
		})
	}
}

// TestConnectionQueryFragment: a query or a fragment in a connection URL is
// refused, saying what to remove.
func TestConnectionQueryFragment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		conn Connection
		want string
	}{
		{Connection{ClientID: "c", AuthURL: "https://auth.example.com?realm=x"}, `remove "?"`},
		{Connection{ClientID: "c", AuthURL: "https://auth.example.com/#frag"}, `remove "#"`},
		{Connection{ClientID: "c", TokenURL: "https://auth.example.com/token?x=1"}, "token URL has a query"},
		{Connection{ClientID: "c", Issuer: "https://auth.example.com/realms/a#x"}, "issuer has a fragment"},
		{Connection{ClientID: "c", AuthURL: "https://auth.example.com?"}, "use https://auth.example.com"},
	} {
		err := tc.conn.Validate()
		if KindOf(err) != KindConfig || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v (want %q)", tc.conn, err, tc.want)
		}
		// Nothing is sent either.
		_, err = cliNewClient(t, Options{}).Login(cliCtx(t), tc.conn, ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		if KindOf(err) != KindConfig {
			t.Errorf("login with %+v: %v", tc.conn, err)
		}
	}
}

// TestConnectionNormalize: a pasted realm path is split into AuthURL and
// Realm (or, for Keycloak 17+ without /auth, an Issuer).
func TestConnectionNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      Connection
		want    Connection
		wantErr string
	}{
		{in: Connection{AuthURL: "https://h"}, want: Connection{AuthURL: "https://h"}},
		{in: Connection{AuthURL: "https://h/"}, want: Connection{AuthURL: "https://h"}},
		{in: Connection{AuthURL: "https://h/auth/realms/ship"}, want: Connection{AuthURL: "https://h", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/auth/realms/ship/"}, want: Connection{AuthURL: "https://h", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h:8443/kc/auth/realms/ship/protocol/openid-connect/token"}, want: Connection{AuthURL: "https://h:8443/kc", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/auth/realms/ship/.well-known/openid-configuration"}, want: Connection{AuthURL: "https://h", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/auth/realms/my%20realm"}, want: Connection{AuthURL: "https://h", Realm: "my realm"}},
		{in: Connection{AuthURL: "https://h/auth/realms/ship", Realm: "ship"}, want: Connection{AuthURL: "https://h", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/realms/ship"}, want: Connection{Issuer: "https://h/realms/ship", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/realms/ship/protocol/openid-connect/certs"}, want: Connection{Issuer: "https://h/realms/ship", Realm: "ship"}},
		{in: Connection{AuthURL: "https://h/auth/realms/ship", Realm: "other"}, wantErr: "names realm ship but the realm is set to other"},
		{in: Connection{AuthURL: "https://h/realms/ship", Issuer: "https://x/realms/y"}, wantErr: "issuer"},
	} {
		got, err := tc.in.Normalize()
		if tc.wantErr != "" {
			if KindOf(err) != KindConfig || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.AuthURL != tc.want.AuthURL || got.Realm != tc.want.Realm || got.Issuer != tc.want.Issuer {
			t.Errorf("%+v: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	// Validate says what to change when Normalize was not called.
	err := Connection{ClientID: "c", AuthURL: "https://h/auth/realms/ship"}.Validate()
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "set the auth URL to https://h and the realm to ship") {
		t.Errorf("validate of a realm path: %v", err)
	}
	if err := (Connection{ClientID: "c", AuthURL: "https://h/"}).Validate(); err != nil {
		t.Errorf("a trailing slash: %v", err)
	}
}

// TestTokenSetJSONOlderState: a set stored before RefreshExpirySource existed
// reads back with the source its numbers imply; a stored source is kept.
func TestTokenSetJSONOlderState(t *testing.T) {
	t.Parallel()
	var ts TokenSet
	old := `{"access_token":"","token_type":"Bearer","expires_in":300,"refresh_expires_in":1800,"not-before-policy":0,"obtained_at":"2026-03-01T10:00:00Z","refresh_expires_at":"2026-03-01T10:30:00Z"}`
	if err := json.Unmarshal([]byte(old), &ts); err != nil {
		t.Fatal(err)
	}
	if ts.RefreshExpirySource != RefreshExpiryResponse || ts.NotBeforePolicy == nil || *ts.NotBeforePolicy != 0 {
		t.Errorf("older state: %q %v", ts.RefreshExpirySource, ts.NotBeforePolicy)
	}
	in := TokenSet{RefreshExpirySource: RefreshExpiryJWT, RefreshExpiresIn: 0, RefreshExpiresAt: cliT0}
	data, _ := json.Marshal(in)
	var back TokenSet
	if err := json.Unmarshal(data, &back); err != nil || back.RefreshExpirySource != RefreshExpiryJWT || back.NotBeforePolicy != nil {
		t.Errorf("round trip: %+v %v", back, err)
	}
}
