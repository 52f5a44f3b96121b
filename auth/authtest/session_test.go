package authtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLogoutEndsSession(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, func(c *Config) { c.Clients = append(c.Clients, Client{ID: "other", Secret: "other-secret"}) })
	r := login(t, s)
	rt, access := r.str("refresh_token"), r.str("access_token")
	logoutURL := oidcURL(s, "logout")

	wantError(t, post(t, logoutURL, clientForm()), 400, "invalid_request", "")
	wantError(t, post(t, logoutURL, clientForm("refresh_token", "garbage")), 400, "invalid_grant", "")
	wantError(t, post(t, logoutURL, clientForm("refresh_token", rt, "client_secret", "wrong-secret")), 401, "unauthorized_client", "")
	other := url.Values{"client_id": {"other"}, "client_secret": {"other-secret"}, "refresh_token": {rt}}
	wantError(t, post(t, logoutURL, other), 400, "invalid_grant", "")

	// Expiry is not checked at logout.
	clock.Advance(29 * time.Minute)
	if out := post(t, logoutURL, clientForm("refresh_token", rt)); out.status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", out.status, out.body)
	}
	wantError(t, refresh(t, s, rt), 400, "invalid_grant", "Session not active")
	if x := introspect(t, s, access); x.json["active"] != false {
		t.Fatalf("introspection after logout: %s", x.body)
	}
	// Logging out an ended session is not an error.
	if out := post(t, logoutURL, clientForm("refresh_token", rt)); out.status != http.StatusNoContent {
		t.Fatalf("second logout: %d %s", out.status, out.body)
	}
	// An expired refresh token still logs out.
	r2 := login(t, s)
	clock.Advance(2 * time.Hour)
	if out := post(t, logoutURL, clientForm("refresh_token", r2.str("refresh_token"))); out.status != http.StatusNoContent {
		t.Fatalf("logout with expired token: %d %s", out.status, out.body)
	}
	if s.Count("logout") != 7 {
		t.Fatalf("logout count %d", s.Count("logout"))
	}
}

func TestIntrospectionAndUserinfoAcrossEndSessions(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	r := login(t, s)
	access := r.str("access_token")

	x := introspect(t, s, access)
	if x.json["active"] != true || x.str("username") != "demo" || x.str("client_id") != DemoClientID ||
		x.str("token_type") != "Bearer" || x.str("sid") != r.str("session_state") {
		t.Fatalf("introspection: %s", x.body)
	}
	if x := introspect(t, s, r.str("refresh_token")); x.json["active"] != true || x.str("token_type") != "Refresh" {
		t.Fatalf("refresh token introspection: %s", x.body)
	}
	if x := introspect(t, s, "not-a-token"); x.json["active"] != false || len(x.json) != 1 {
		t.Fatalf("garbage introspection: %s", x.body)
	}
	u := get(t, oidcURL(s, "userinfo"), bearer(access))
	if u.status != 200 || u.str("preferred_username") != "demo" || u.str("email") != "demo@example.com" ||
		u.str("name") != "Dana Demo" || u.str("sub") == "" {
		t.Fatalf("userinfo: %d %s", u.status, u.body)
	}
	// POST with the token in the form works too.
	if u := post(t, oidcURL(s, "userinfo"), url.Values{"access_token": {access}}); u.status != 200 {
		t.Fatalf("userinfo POST: %d %s", u.status, u.body)
	}
	wantError(t, get(t, oidcURL(s, "userinfo")), 400, "invalid_request", "")
	wantError(t, get(t, oidcURL(s, "userinfo"), bearer("garbage")), 401, "invalid_token", "Token verification failed")

	// Introspection needs client authentication.
	bad := post(t, oidcURL(s, "token/introspect"), clientForm("token", access, "client_secret", "wrong-secret"))
	wantError(t, bad, 401, "unauthorized_client", "")
	if strings.Contains(string(bad.body), "wrong-secret") {
		t.Fatal("error leaks the secret")
	}

	s.EndSessions()
	if x := introspect(t, s, access); x.json["active"] != false || len(x.json) != 1 {
		t.Fatalf("introspection after EndSessions: %s", x.body)
	}
	u = get(t, oidcURL(s, "userinfo"), bearer(access))
	wantError(t, u, 401, "invalid_token", "Session expired")
	if h := u.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, `Bearer realm="master"`) {
		t.Fatalf("WWW-Authenticate %q", h)
	}
	wantError(t, refresh(t, s, r.str("refresh_token")), 400, "invalid_grant", "Session not active")
	if s.Count("introspect") != 5 || s.Count("userinfo") != 5 {
		t.Fatalf("counts introspect=%d userinfo=%d", s.Count("introspect"), s.Count("userinfo"))
	}
}

func TestDisabledUserMidSession(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	r := login(t, s)
	u := DemoConfig().Users[0]
	u.Disabled = true
	s.SetUser(u)
	wantError(t, refresh(t, s, r.str("refresh_token")), 400, "invalid_grant", "User disabled")
	if x := introspect(t, s, r.str("access_token")); x.json["active"] != false {
		t.Fatalf("disabled user's token active: %s", x.body)
	}
	wantError(t, post(t, oidcURL(s, "token"), passwordForm()), 400, "invalid_grant", "Account disabled")
	u.Disabled = false
	s.SetUser(u)
	login(t, s)
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	revokeURL := oidcURL(s, "revoke")

	r := login(t, s)
	if out := post(t, revokeURL, clientForm("token", r.str("access_token"), "token_type_hint", "access_token")); out.status != 200 {
		t.Fatalf("revoke access: %d %s", out.status, out.body)
	}
	if x := introspect(t, s, r.str("access_token")); x.json["active"] != false {
		t.Fatalf("revoked access token active: %s", x.body)
	}
	// The session survives an access token revocation.
	r2 := refresh(t, s, r.str("refresh_token"))
	if r2.status != 200 {
		t.Fatalf("refresh after access revoke: %d %s", r2.status, r2.body)
	}
	if out := post(t, revokeURL, clientForm("token", r2.str("refresh_token"))); out.status != 200 {
		t.Fatalf("revoke refresh: %d %s", out.status, out.body)
	}
	wantError(t, refresh(t, s, r2.str("refresh_token")), 400, "invalid_grant", "Session not active")
	if out := post(t, revokeURL, clientForm("token", "garbage")); out.status != 200 {
		t.Fatalf("revoke garbage: %d", out.status)
	}
	wantError(t, post(t, revokeURL, clientForm("token", "x", "client_secret", "wrong-secret")), 401, "unauthorized_client", "")
	if s.Count("revoke") != 4 {
		t.Fatalf("revoke count %d", s.Count("revoke"))
	}
}

func TestDiscoveryAndRealm(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	d := get(t, s.Issuer()+"/.well-known/openid-configuration")
	if d.status != 200 || d.str("issuer") != s.Issuer() {
		t.Fatalf("discovery: %d %s", d.status, d.body)
	}
	for k, path := range map[string]string{
		"token_endpoint": "token", "jwks_uri": "certs", "end_session_endpoint": "logout",
		"userinfo_endpoint": "userinfo", "introspection_endpoint": "token/introspect", "revocation_endpoint": "revoke",
	} {
		if d.str(k) != oidcURL(s, path) {
			t.Errorf("%s = %q", k, d.str(k))
		}
	}
	if !strings.Contains(string(d.body), `"password"`) {
		t.Error("password grant not advertised")
	}
	if s.URL() != strings.TrimSuffix(s.Issuer(), "/auth/realms/master") || s.Realm() != "master" {
		t.Fatalf("URL %q Realm %q Issuer %q", s.URL(), s.Realm(), s.Issuer())
	}

	for _, u := range []string{
		s.URL() + "/auth/realms/nope/.well-known/openid-configuration",
		s.URL() + "/auth/realms/nope/protocol/openid-connect/token",
	} {
		var r *result
		if strings.HasSuffix(u, "token") {
			r = post(t, u, passwordForm())
		} else {
			r = get(t, u)
		}
		if r.status != 404 || r.str("error") != "Realm does not exist" {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	if r := get(t, s.URL()+"/elsewhere"); r.status != 404 {
		t.Fatalf("unknown path: %d", r.status)
	}
	if s.Count("discovery") != 2 {
		t.Fatalf("discovery count %d", s.Count("discovery"))
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	tokenURL := oidcURL(s, "token")

	s.Inject(Fault{Endpoint: "token", Status: 503, Body: "<html>maintenance</html>", Times: 2})
	for i := 0; i < 2; i++ {
		r := post(t, tokenURL, passwordForm())
		if r.status != 503 || string(r.body) != "<html>maintenance</html>" {
			t.Fatalf("fault %d: %d %s", i, r.status, r.body)
		}
	}
	login(t, s) // the fault is used up

	s.Inject(Fault{Endpoint: "token", Malformed: true})
	if r := post(t, tokenURL, passwordForm()); r.status != 200 || string(r.body) != "{not json" {
		t.Fatalf("malformed: %d %q", r.status, r.body)
	}

	s.Inject(Fault{Endpoint: "certs", Huge: true})
	if r := get(t, oidcURL(s, "certs")); r.status != 200 || len(r.body) <= 2<<20 {
		t.Fatalf("huge: %d, %d bytes", r.status, len(r.body))
	}

	s.Inject(Fault{Endpoint: "token", Drop: true})
	resp, err := httpClient.PostForm(tokenURL, passwordForm())
	if err == nil {
		resp.Body.Close()
		t.Fatalf("drop: got an answer %d", resp.StatusCode)
	}

	// A short delay, then the normal answer.
	s.Inject(Fault{Endpoint: "userinfo", Delay: 20 * time.Millisecond})
	access := login(t, s).str("access_token")
	if r := get(t, oidcURL(s, "userinfo"), bearer(access)); r.status != 200 {
		t.Fatalf("after delay: %d %s", r.status, r.body)
	}

	// A long delay is cut short by the client giving up.
	s.Inject(Fault{Endpoint: "discovery", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Issuer()+"/.well-known/openid-configuration", nil)
	if resp, err := httpClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("delay: got an answer before the client's deadline")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delay: %v", err)
	}

	// Faults queue in order, per endpoint.
	s.Inject(Fault{Endpoint: "introspect", Status: 500, Body: `{"error":"unknown_error"}`})
	s.Inject(Fault{Endpoint: "introspect", Status: 502})
	r1 := post(t, oidcURL(s, "token/introspect"), clientForm("token", access))
	r2 := post(t, oidcURL(s, "token/introspect"), clientForm("token", access))
	if r1.status != 500 || r1.str("error") != "unknown_error" || r2.status != 502 {
		t.Fatalf("queued faults: %d %s, %d", r1.status, r1.body, r2.status)
	}
	if x := introspect(t, s, access); x.json["active"] != true {
		t.Fatalf("after faults: %s", x.body)
	}
	// Faulted requests are counted, grants included.
	if s.Count("token") != 6 || s.Count("password") != 6 || s.Count("certs") != 1 || s.Count("discovery") != 1 {
		t.Fatalf("counts token=%d password=%d certs=%d discovery=%d",
			s.Count("token"), s.Count("password"), s.Count("certs"), s.Count("discovery"))
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:80", "[::]:0", "nonsense"} {
		if s, err := Start(addr, DemoConfig()); err == nil {
			s.Close()
			t.Errorf("Start(%q) listened", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "0", ":0", "localhost:0"} {
		s, err := Start(addr, DemoConfig())
		if err != nil {
			t.Fatalf("Start(%q): %v", addr, err)
		}
		if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
			t.Errorf("Start(%q) URL %q", addr, s.URL())
		}
		login(t, s)
		s.Close()
		s.Close() // twice is fine
	}
}

func TestHandlerEmbedsWithRequestIssuer(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	r := post(t, ts.URL+"/auth/realms/master/protocol/openid-connect/token", passwordForm())
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if iss := payload(t, r.str("access_token"))["iss"]; iss != ts.URL+"/auth/realms/master" {
		t.Fatalf("iss %v", iss)
	}
}

func TestRotateKeyKeepsOldTokensVerifiable(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	old := login(t, s).str("access_token")
	_, oldHdr := verifyWithCerts(t, s, old)
	if err := s.RotateKey(); err != nil {
		t.Fatal(err)
	}
	fresh := login(t, s).str("access_token")
	_, newHdr := verifyWithCerts(t, s, fresh)
	if newHdr.KeyID == oldHdr.KeyID {
		t.Fatal("kid did not change after RotateKey")
	}
	verifyWithCerts(t, s, old)
	if x := introspect(t, s, old); x.json["active"] != true {
		t.Fatalf("old token after rotation: %s", x.body)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, func(c *Config) { c.RevokeRefreshToken = true })
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := httpClient.PostForm(oidcURL(s, "token"), passwordForm())
			if err != nil {
				errs <- err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- resp.Status
			}
			clock.Advance(time.Second)
			s.Inject(Fault{Endpoint: "certs", Status: 500})
			_ = s.Count("token")
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.EndSessions() }()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if s.Count("password") != 8 {
		t.Fatalf("password count %d", s.Count("password"))
	}

	// Two refreshes of one token at once under rotation: exactly one wins.
	rt := login(t, s).str("refresh_token")
	results := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func() {
			resp, err := httpClient.PostForm(oidcURL(s, "token"), url.Values{
				"grant_type": {"refresh_token"}, "client_id": {DemoClientID},
				"client_secret": {DemoClientSecret}, "refresh_token": {rt},
			})
			if err != nil {
				results <- 0
				return
			}
			resp.Body.Close()
			results <- resp.StatusCode
		}()
	}
	a, b := <-results, <-results
	if a+b != 200+400 {
		t.Fatalf("concurrent refresh statuses %d and %d, want one 200 and one 400", a, b)
	}
}

func TestInjectRejectsUnknownEndpoint(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	defer func() {
		if recover() == nil {
			t.Fatal("Inject accepted an unknown endpoint")
		}
	}()
	s.Inject(Fault{Endpoint: "tokens", Status: 500})
}
