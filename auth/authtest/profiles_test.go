package authtest

import (
	"net/http"
	"strings"
	"testing"
)

// TestProfileOptions: each option changes what it says, alone, and the
// discovery document reflects it.
func TestProfileOptions(t *testing.T) {
	t.Parallel()
	disc := func(t *testing.T, s *Server) *result {
		t.Helper()
		r := get(t, s.Issuer()+"/.well-known/openid-configuration")
		if r.status != http.StatusOK {
			t.Fatalf("discovery: %d", r.status)
		}
		return r
	}

	t.Run("default is Keycloak", func(t *testing.T) {
		s, _ := newTest(t, nil)
		d := disc(t, s)
		for _, k := range []string{"introspection_endpoint", "end_session_endpoint"} {
			if d.str(k) == "" {
				t.Errorf("discovery lacks %s", k)
			}
		}
		if d.str("jwks_uri") != oidcURL(s, "certs") || d.str("revocation_endpoint") != oidcURL(s, "revoke") {
			t.Errorf("paths: %s", d.body)
		}
		r := login(t, s)
		if r.str("token_type") != "Bearer" || r.json["refresh_expires_in"] == nil || strings.Count(r.str("refresh_token"), ".") != 2 {
			t.Errorf("token answer: %s", r.body)
		}
	})
	t.Run("error bodies empty", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.ErrorBodies = ErrorBodiesEmpty })
		f := passwordForm()
		f.Set("password", "wrong")
		r := post(t, oidcURL(s, "token"), f)
		if r.status != http.StatusUnauthorized || len(r.body) != 0 {
			t.Errorf("%d %q", r.status, r.body)
		}
	})
	t.Run("error bodies text", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.ErrorBodies = ErrorBodiesText })
		f := passwordForm()
		f.Set("password", "wrong")
		r := post(t, oidcURL(s, "token"), f)
		if r.status != http.StatusUnauthorized || strings.TrimSpace(string(r.body)) != "Access denied" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("%d %q %q", r.status, r.body, r.header.Get("Content-Type"))
		}
		r = refresh(t, s, "not-a-token")
		if r.status != http.StatusBadRequest || strings.TrimSpace(string(r.body)) != "Bad Request" {
			t.Errorf("refresh: %d %q", r.status, r.body)
		}
	})
	t.Run("lowercase bearer", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.LowercaseTokenType = true })
		if r := login(t, s); r.str("token_type") != "bearer" {
			t.Errorf("token_type %q", r.str("token_type"))
		}
	})
	t.Run("no introspection, userinfo needs openid", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.NoIntrospection, c.UserinfoRequiresOpenID = true, true })
		if d := disc(t, s); d.json["introspection_endpoint"] != nil {
			t.Errorf("discovery advertises introspection")
		}
		r := login(t, s)
		if got := post(t, oidcURL(s, "token/introspect"), clientForm("token", r.str("access_token"))); got.status != http.StatusNotFound {
			t.Errorf("introspection answered %d", got.status)
		}
		if got := get(t, oidcURL(s, "userinfo"), bearer(r.str("access_token"))); got.status != http.StatusUnauthorized ||
			!strings.Contains(got.header.Get("WWW-Authenticate"), "insufficient_scope") {
			t.Errorf("userinfo without openid: %d %s", got.status, got.body)
		}
		f := passwordForm()
		f.Set("scope", "openid")
		r = post(t, oidcURL(s, "token"), f)
		if got := get(t, oidcURL(s, "userinfo"), bearer(r.str("access_token"))); got.status != http.StatusOK {
			t.Errorf("userinfo with openid: %d %s", got.status, got.body)
		}
	})
	t.Run("revocation only, at its own path", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.NoLogout, c.RevocationPath = true, "/revoke" })
		d := disc(t, s)
		if d.json["end_session_endpoint"] != nil || d.str("revocation_endpoint") != s.Issuer()+"/revoke" {
			t.Errorf("discovery: %s", d.body)
		}
		r := login(t, s)
		rt := r.str("refresh_token")
		if got := post(t, oidcURL(s, "logout"), clientForm("refresh_token", rt)); got.status != http.StatusNotFound {
			t.Errorf("logout answered %d", got.status)
		}
		if got := post(t, oidcURL(s, "revoke"), clientForm("token", rt)); got.status != http.StatusNotFound {
			t.Errorf("keycloak's revoke path answered %d", got.status)
		}
		if got := post(t, s.Issuer()+"/revoke", clientForm("token", rt)); got.status != http.StatusOK {
			t.Errorf("revoke answered %d", got.status)
		}
		if s.RefreshAccepted(rt) || s.Sessions() != 0 {
			t.Errorf("the session survived revocation")
		}
		if got := refresh(t, s, rt); got.status != http.StatusBadRequest {
			t.Errorf("refresh after revocation: %d", got.status)
		}
	})
	t.Run("rotation revokes the old refresh token", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.RevokeRefreshToken = true })
		rt := login(t, s).str("refresh_token")
		next := refresh(t, s, rt)
		if next.status != http.StatusOK || next.str("refresh_token") == rt {
			t.Fatalf("refresh: %d", next.status)
		}
		if s.RefreshAccepted(rt) {
			t.Errorf("the redeemed refresh token is still accepted")
		}
	})
	t.Run("no rotation", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.NoRefreshRotation = true })
		rt := login(t, s).str("refresh_token")
		for range 2 {
			next := refresh(t, s, rt)
			if next.status != http.StatusOK || next.json["refresh_token"] != nil || next.json["refresh_expires_in"] != nil {
				t.Fatalf("refresh: %d %s", next.status, next.body)
			}
		}
		if !s.RefreshAccepted(rt) || s.LastRefreshToken() != rt {
			t.Errorf("the one refresh token is not the current one")
		}
	})
	t.Run("jwks at its own path", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.JWKSPath = "/jwks" })
		if d := disc(t, s); d.str("jwks_uri") != s.Issuer()+"/jwks" {
			t.Errorf("jwks_uri %q", d.str("jwks_uri"))
		}
		if r := get(t, s.Issuer()+"/jwks"); r.status != http.StatusOK || r.json["keys"] == nil {
			t.Errorf("/jwks: %d", r.status)
		}
		if r := get(t, oidcURL(s, "certs")); r.status != http.StatusNotFound {
			t.Errorf("certs: %d", r.status)
		}
	})
	t.Run("opaque refresh tokens", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.OpaqueRefreshTokens = true })
		r := login(t, s)
		rt := r.str("refresh_token")
		if rt == "" || strings.Contains(rt, ".") || r.json["refresh_expires_in"] != nil {
			t.Fatalf("refresh token %q, body %s", rt, r.body)
		}
		if got := refresh(t, s, rt); got.status != http.StatusOK {
			t.Errorf("refresh with an opaque token: %d %s", got.status, got.body)
		}
		if got := post(t, oidcURL(s, "logout"), clientForm("refresh_token", rt)); got.status != http.StatusNoContent || s.RefreshAccepted(rt) {
			t.Errorf("logout: %d", got.status)
		}
	})
	t.Run("scope required", func(t *testing.T) {
		s, _ := newTest(t, func(c *Config) { c.RequireScope = true })
		wantError(t, post(t, oidcURL(s, "token"), passwordForm()), http.StatusBadRequest, "invalid_request", "Missing parameter: scope")
		f := passwordForm()
		f.Set("scope", "email")
		if r := post(t, oidcURL(s, "token"), f); r.status != http.StatusOK {
			t.Errorf("with a scope: %d", r.status)
		}
	})
	t.Run("every profile logs in with openid", func(t *testing.T) {
		for _, p := range Profiles() {
			s, _ := newTest(t, p.Apply)
			f := passwordForm()
			f.Set("scope", "openid")
			if r := post(t, oidcURL(s, "token"), f); r.status != http.StatusOK {
				t.Errorf("%s: %d", p.Name, r.status)
			}
		}
	})
}
