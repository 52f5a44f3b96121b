package authtest

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPasswordGrantMatchesKeycloak(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, nil)
	r := login(t, s)

	if r.str("token_type") != "Bearer" || r.num("expires_in") != 1314000 || r.num("refresh_expires_in") != 1800 {
		t.Fatalf("token response %s", r.body)
	}
	if v, ok := r.json["not-before-policy"]; !ok || v != float64(0) {
		t.Fatalf("not-before-policy = %v (present %v), want 0", v, ok)
	}
	if r.str("scope") != "email profile write" {
		t.Fatalf("scope %q, want %q", r.str("scope"), "email profile write")
	}
	if _, ok := r.json["id_token"]; ok {
		t.Fatal("id_token sent without the openid scope")
	}
	sid := r.str("session_state")
	if sid == "" {
		t.Fatal("no session_state")
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}

	claims, hdr := verifyWithCerts(t, s, r.str("access_token"))
	if hdr.KeyID == "" || hdr.Algorithm != "RS256" || hdr.ExtraHeaders["typ"] != "JWT" {
		t.Fatalf("access token header %+v", hdr)
	}
	now := float64(clock.Now().Unix())
	want := map[string]any{
		"iss": s.Issuer(), "typ": "Bearer", "azp": DemoClientID, "sid": sid, "acr": "1",
		"aud": "account", "scope": "email profile write", "preferred_username": "demo",
		"email": "demo@example.com", "email_verified": true, "name": "Dana Demo",
		"given_name": "Dana", "family_name": "Demo", "iat": now, "exp": now + 1314000,
	}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s = %v, want %v", k, claims[k], v)
		}
	}
	for _, k := range []string{"jti", "sub", "allowed-origins"} {
		if claims[k] == nil {
			t.Errorf("claim %s missing", k)
		}
	}
	realm := strs(claims["realm_access"].(map[string]any)["roles"])
	if !slices.Equal(realm, []string{"offline_access", "uma_authorization", "shipper"}) {
		t.Errorf("realm roles %v", realm)
	}
	ra := claims["resource_access"].(map[string]any)
	if got := strs(ra[DemoClientID].(map[string]any)["roles"]); !slices.Equal(got, []string{"write", "read"}) {
		t.Errorf("client roles %v", got)
	}
	if ra["account"] == nil {
		t.Error("no account roles")
	}

	rt := r.str("refresh_token")
	rhdr := jwtHeader(t, rt)
	if rhdr["alg"] != "HS512" {
		t.Fatalf("refresh token alg %v, want HS512", rhdr["alg"])
	}
	rc := payload(t, rt)
	if rc["typ"] != "Refresh" || rc["exp"] != now+1800 || rc["sid"] != sid || rc["azp"] != DemoClientID {
		t.Fatalf("refresh token claims %v", rc)
	}
	if s.Count("password") != 1 || s.Count("token") != 1 {
		t.Fatalf("counts password=%d token=%d", s.Count("password"), s.Count("token"))
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func jwtHeader(t *testing.T, tok string) map[string]any {
	t.Helper()
	h := strings.SplitN(tok, ".", 2)[0]
	return payload(t, "x."+h+".x") // reuse the payload decoder on the header part
}

func TestOpenIDScopeAddsIDToken(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, nil)
	f := passwordForm()
	f.Set("scope", "openid write")
	r := post(t, oidcURL(s, "token"), f)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r.str("scope") != "openid email profile write" {
		t.Fatalf("scope %q", r.str("scope"))
	}
	id, _ := verifyWithCerts(t, s, r.str("id_token"))
	if id["typ"] != "ID" || id["aud"] != DemoClientID || id["sid"] != r.str("session_state") || id["at_hash"] == nil {
		t.Fatalf("id token claims %v", id)
	}
	// A refresh keeps the scope and sends a new ID token.
	r2 := refresh(t, s, r.str("refresh_token"))
	if r2.status != http.StatusOK || r2.str("id_token") == "" || r2.str("scope") != "openid email profile write" {
		t.Fatalf("refresh: %d %s", r2.status, r2.body)
	}
}

func TestTokenEndpointErrors(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, func(c *Config) {
		c.Users = append(c.Users,
			User{Username: "off", Password: "off-pw", Disabled: true},
			User{Username: "newbie", Password: "newbie-pw", RequiredActions: true},
			User{Username: "online", Password: "online-pw"},
		)
		c.Clients = append(c.Clients,
			Client{ID: "gone", Secret: "gone-secret", Disabled: true},
			Client{ID: "web", Secret: "web-secret", NoDirectAccessGrant: true},
		)
	})
	with := func(kv ...string) url.Values {
		f := passwordForm()
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				f.Del(kv[i])
			} else {
				f.Set(kv[i], kv[i+1])
			}
		}
		return f
	}
	cases := []struct {
		name   string
		form   url.Values
		status int
		code   string
		desc   string
	}{
		{"missing username", with("username", "-"), 401, "invalid_request", "Missing parameter: username"},
		{"unknown client", with("client_id", "nobody"), 401, "invalid_client", "Invalid client or Invalid client credentials"},
		{"disabled client", with("client_id", "gone", "client_secret", "gone-secret"), 401, "invalid_client", "Invalid client or Invalid client credentials"},
		{"wrong client secret", with("client_secret", "not-the-secret"), 401, "unauthorized_client", "Invalid client or Invalid client credentials"},
		{"missing client secret", with("client_secret", "-"), 401, "unauthorized_client", "Invalid client or Invalid client credentials"},
		{"missing client id", with("client_id", "-"), 400, "invalid_client", "Missing client_id parameter"},
		{"direct grants off", with("client_id", "web", "client_secret", "web-secret"), 400, "unauthorized_client", "Client not allowed for direct access grants"},
		{"unknown user", with("username", "nobody"), 400, "invalid_grant", "Invalid user credentials"},
		{"wrong password", with("password", "wrong-password-123"), 401, "invalid_grant", "Invalid user credentials"},
		{"missing password", with("password", "-"), 401, "invalid_grant", "Invalid user credentials"},
		{"disabled user", with("username", "off", "password", "off-pw"), 400, "invalid_grant", "Account disabled"},
		{"disabled user, wrong password", with("username", "off", "password", "nope"), 400, "invalid_grant", "Account disabled"},
		{"required actions", with("username", "newbie", "password", "newbie-pw"), 400, "invalid_grant", "Account is not fully set up"},
		{"bad scope", with("scope", "write admin"), 400, "invalid_scope", "Invalid scopes: write admin"},
		{"offline not allowed", with("username", "online", "password", "online-pw", "scope", "offline_access"), 400, "not_allowed", ""},
		{"unsupported grant", with("grant_type", "implicit"), 400, "unsupported_grant_type", "Unsupported grant_type"},
		{"missing grant", with("grant_type", "-"), 400, "invalid_request", "Missing form parameter: grant_type"},
		{"garbage refresh token", with("grant_type", "refresh_token", "refresh_token", "garbage.not.jwt"), 400, "invalid_grant", "Invalid refresh token"},
		{"missing refresh token", with("grant_type", "refresh_token"), 400, "invalid_request", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, oidcURL(s, "token"), tc.form)
			wantError(t, r, tc.status, tc.code, tc.desc)
			for _, secret := range []string{tc.form.Get("password"), tc.form.Get("client_secret")} {
				if secret != "" && strings.Contains(string(r.body), secret) {
					t.Fatalf("error body leaks a secret: %s", r.body)
				}
			}
		})
	}

	t.Run("json content type", func(t *testing.T) {
		r := post(t, oidcURL(s, "token"), passwordForm(), func(r *http.Request) {
			r.Header.Set("Content-Type", "application/json")
			r.Body = http.NoBody
		})
		wantError(t, r, 400, "invalid_request", "")
	})
	t.Run("duplicated parameter", func(t *testing.T) {
		f := passwordForm()
		f.Add("username", "other")
		wantError(t, post(t, oidcURL(s, "token"), f), 400, "invalid_request", "")
	})
	t.Run("GET", func(t *testing.T) {
		if r := get(t, oidcURL(s, "token")); r.status != http.StatusMethodNotAllowed {
			t.Fatalf("GET token: %d", r.status)
		}
	})
	t.Run("bad basic header", func(t *testing.T) {
		f := passwordForm()
		f.Del("client_id")
		f.Del("client_secret")
		r := post(t, oidcURL(s, "token"), f, func(r *http.Request) { r.Header.Set("Authorization", "Negotiate abc") })
		if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("got %d %q", r.status, r.header.Get("WWW-Authenticate"))
		}
	})
}

func TestBasicClientAuthentication(t *testing.T) {
	t.Parallel()
	const secret = "s3cr+t:/= %x"
	s, _ := newTest(t, func(c *Config) { c.Clients = append(c.Clients, Client{ID: "cli ent", Secret: secret}) })
	f := passwordForm()
	f.Del("client_id")
	f.Del("client_secret")
	basic := func(id, sec string) func(*http.Request) {
		return func(r *http.Request) {
			raw := url.QueryEscape(id) + ":" + url.QueryEscape(sec)
			r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(raw)))
		}
	}
	if r := post(t, oidcURL(s, "token"), f, basic("cli ent", secret)); r.status != 200 {
		t.Fatalf("basic auth: %d %s", r.status, r.body)
	}
	r := post(t, oidcURL(s, "token"), f, basic("cli ent", "wrong"))
	wantError(t, r, 401, "unauthorized_client", "")
	// The form's client_id wins over the Basic header.
	f.Set("client_id", DemoClientID)
	f.Set("client_secret", DemoClientSecret)
	if r := post(t, oidcURL(s, "token"), f, basic("cli ent", "wrong")); r.status != 200 {
		t.Fatalf("form over basic: %d %s", r.status, r.body)
	}
}

func TestRefreshWithoutRotation(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, nil)
	first := login(t, s)
	rt1 := first.str("refresh_token")
	clock.Advance(10 * time.Second)
	second := refresh(t, s, rt1)
	if second.status != 200 {
		t.Fatalf("refresh: %d %s", second.status, second.body)
	}
	rt2 := second.str("refresh_token")
	if rt2 == "" || rt2 == rt1 {
		t.Fatal("refresh did not return a new refresh token")
	}
	if second.str("access_token") == first.str("access_token") {
		t.Fatal("refresh did not return a new access token")
	}
	if second.str("session_state") != first.str("session_state") {
		t.Fatal("refresh changed the session")
	}
	if pl := payload(t, rt2); pl["sid"] != first.str("session_state") {
		t.Fatalf("sid %v", pl["sid"])
	}
	// Without rotation the old refresh token still works.
	if r := refresh(t, s, rt1); r.status != 200 {
		t.Fatalf("old refresh token refused: %d %s", r.status, r.body)
	}
	if s.Count("refresh_token") != 2 || s.Count("password") != 1 || s.Count("token") != 3 {
		t.Fatalf("counts refresh=%d password=%d token=%d", s.Count("refresh_token"), s.Count("password"), s.Count("token"))
	}
}

func TestRefreshRotationDetectsReuse(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, func(c *Config) { c.RevokeRefreshToken = true })
	rtA := login(t, s).str("refresh_token")
	second := refresh(t, s, rtA)
	if second.status != 200 {
		t.Fatalf("refresh: %d %s", second.status, second.body)
	}
	rtB := second.str("refresh_token")
	wantError(t, refresh(t, s, rtA), 400, "invalid_grant", "Maximum allowed refresh token reuse exceeded")
	// Reuse ended the session: even the newest token is refused now.
	wantError(t, refresh(t, s, rtB), 400, "invalid_grant", "Session not active")
	if r := introspect(t, s, second.str("access_token")); r.json["active"] != false {
		t.Fatalf("access token still active after reuse: %s", r.body)
	}
}

func TestRefreshTokenOfAnotherClient(t *testing.T) {
	t.Parallel()
	s, _ := newTest(t, func(c *Config) { c.Clients = append(c.Clients, Client{ID: "other", Secret: "other-secret"}) })
	rt := login(t, s).str("refresh_token")
	r := post(t, oidcURL(s, "token"), url.Values{
		"grant_type": {"refresh_token"}, "client_id": {"other"}, "client_secret": {"other-secret"}, "refresh_token": {rt},
	})
	wantError(t, r, 400, "invalid_grant", "")
	// An access token is not a refresh token.
	wantError(t, refresh(t, s, login(t, s).str("access_token")), 400, "invalid_grant", "Invalid refresh token")
}

func TestRefreshExpiryAndIdleSession(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, nil) // access 15 days, refresh 30 minutes
	first := login(t, s)
	access := first.str("access_token")

	// At exactly refresh_expires_in the token is still active (Keycloak
	// compares whole seconds); the refresh restarts the idle timer.
	clock.Advance(30 * time.Minute)
	r := refresh(t, s, first.str("refresh_token"))
	if r.status != 200 {
		t.Fatalf("refresh at the boundary: %d %s", r.status, r.body)
	}
	clock.Advance(31 * time.Minute)
	wantError(t, refresh(t, s, r.str("refresh_token")), 400, "invalid_grant", "Token is not active")

	// The 15-day access token is far from its exp, yet the idle session is gone.
	if pl := payload(t, access); int64(pl["exp"].(float64)) <= clock.Now().Unix() {
		t.Fatal("test premise: access token should not be expired")
	}
	if r := introspect(t, s, access); r.json["active"] != false {
		t.Fatalf("introspection after idle timeout: %s", r.body)
	}
	u := get(t, oidcURL(s, "userinfo"), bearer(access))
	wantError(t, u, 401, "invalid_token", "Session expired")
}

func TestAccessTokenExpiry(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, func(c *Config) { c.AccessTTL = 5 * time.Minute })
	r := login(t, s)
	if r.num("expires_in") != 300 {
		t.Fatalf("expires_in %v", r.num("expires_in"))
	}
	access := r.str("access_token")
	clock.Advance(5*time.Minute + time.Second)
	if r := introspect(t, s, access); r.json["active"] != false {
		t.Fatalf("expired token active: %s", r.body)
	}
	u := get(t, oidcURL(s, "userinfo"), bearer(access))
	wantError(t, u, 401, "invalid_token", "Token verification failed")
	if !strings.Contains(u.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("WWW-Authenticate %q", u.header.Get("WWW-Authenticate"))
	}
	// The session itself is alive: a refresh works.
	if r2 := refresh(t, s, r.str("refresh_token")); r2.status != 200 {
		t.Fatalf("refresh: %d %s", r2.status, r2.body)
	}
}

func TestNoRefreshExpiry(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, func(c *Config) { c.RefreshTTL = -1 })
	r := login(t, s)
	if v, ok := r.json["refresh_expires_in"]; !ok || v != float64(0) {
		t.Fatalf("refresh_expires_in %v", v)
	}
	pl := payload(t, r.str("refresh_token"))
	if _, ok := pl["exp"]; ok || pl["typ"] != "Refresh" {
		t.Fatalf("refresh token claims %v", pl)
	}
	clock.Advance(1000 * time.Hour)
	if r2 := refresh(t, s, r.str("refresh_token")); r2.status != 200 {
		t.Fatalf("refresh: %d %s", r2.status, r2.body)
	}
}

func TestOfflineTokens(t *testing.T) {
	t.Parallel()
	s, clock := newTest(t, nil)
	f := passwordForm()
	f.Set("scope", "offline_access")
	r := post(t, oidcURL(s, "token"), f)
	if r.status != 200 || r.num("refresh_expires_in") != 0 || !strings.Contains(r.str("scope"), "offline_access") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	pl := payload(t, r.str("refresh_token"))
	if _, ok := pl["exp"]; ok || pl["typ"] != "Offline" {
		t.Fatalf("offline token claims %v", pl)
	}
	clock.Advance(48 * time.Hour)
	r2 := refresh(t, s, r.str("refresh_token"))
	if r2.status != 200 {
		t.Fatalf("offline refresh: %d %s", r2.status, r2.body)
	}
	s.EndSessions()
	wantError(t, refresh(t, s, r2.str("refresh_token")), 400, "invalid_grant", "Offline session not active")
}

func TestShortRealLifetimes(t *testing.T) {
	t.Parallel()
	cfg := DemoConfig()
	cfg.AccessTTL = time.Second
	cfg.RefreshTTL = time.Second
	s := NewServer(cfg)
	defer s.Close()
	r := login(t, s)
	if r.num("expires_in") != 1 || r.num("refresh_expires_in") != 1 {
		t.Fatalf("lifetimes %s", r.body)
	}
	// Poll (bounded) until the refresh token runs out on the real clock.
	deadline := time.Now().Add(5 * time.Second)
	for {
		x := refresh(t, s, r.str("refresh_token"))
		if x.status == 400 && x.str("error") == "invalid_grant" {
			break
		}
		if x.status != 200 || time.Now().After(deadline) {
			t.Fatalf("refresh token never expired: %d %s", x.status, x.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if x := introspect(t, s, r.str("access_token")); x.json["active"] != false {
		t.Fatalf("1-second access token still active: %s", x.body)
	}
}
