package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// TestCLIAgainstServerProfiles runs the CLI flows a user runs (keys new,
// token, inspect --verify, logout) against every authtest profile: servers
// that differ from Keycloak in error bodies, token_type case, introspection,
// userinfo, logout, refresh rotation, JWKS path, refresh token shape and
// required scope. The assertions are on what the server saw and on what the
// CLI printed.
func TestCLIAgainstServerProfiles(t *testing.T) {
	t.Parallel()
	bin := buildShipkey(t)
	for _, p := range authtest.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel() // a server and an installation of its own
			srv := authtest.NewServer(lcConfig(p.Apply))
			defer srv.Close()
			c := newCLIRun(t, bin, 2*time.Minute)

			// keys new; the scope-required server needs a scope, the
			// others must not mind it. No openid: userinfo may refuse it.
			c.newKey(srv, "k", "--scope", "email")
			if srv.Sessions() != 1 {
				t.Fatalf("sessions after keys new = %d", srv.Sessions())
			}
			tok := c.token("k")
			if got := srv.Count("token"); got != 1 {
				t.Errorf("token requests = %d, want 1 (a fresh token is reused)", got)
			}

			// inspect --verify: the signature is checked against the JWKS the
			// server publishes (wherever discovery says it is), and the
			// server's answer about the session is not "ended".
			out, stderr, _ := c.run(nil, "inspect", "--key", "k", "--verify", "--json")
			var in struct {
				Signature *struct {
					State, Reason string
				} `json:"signature"`
				Liveness *struct {
					State, Via, Reason string
				} `json:"liveness"`
			}
			if err := json.Unmarshal([]byte(out), &in); err != nil {
				t.Fatalf("inspect --json: %v\nstdout %q\nstderr %s", err, out, stderr)
			}
			if in.Signature == nil || in.Signature.State != "verified" {
				t.Errorf("signature: %+v", in.Signature)
			}
			if in.Liveness == nil || in.Liveness.State == "not active" {
				t.Errorf("liveness of a live session: %+v", in.Liveness)
			}
			if p.Name == "no-introspection-openid-userinfo" {
				if in.Liveness == nil || in.Liveness.State != "cannot tell" || !strings.Contains(in.Liveness.Reason, "openid") {
					t.Errorf("a userinfo refusal must be 'cannot tell' with a reason: %+v", in.Liveness)
				}
				text, stderr, _ := c.run(nil, "inspect", "--key", "k")
				for _, bad := range []string{"no longer accepts", "log in again", "not active"} {
					if strings.Contains(text, bad) || strings.Contains(stderr, bad) {
						t.Errorf("inspect says %q of a live session:\n%s\n%s", bad, text, stderr)
					}
				}
				if !strings.Contains(text, "Server:    cannot tell") {
					t.Errorf("inspect does not say it cannot tell:\n%s", text)
				}
			}
			if strings.Contains(out, tok) || strings.Contains(stderr, tok) {
				t.Errorf("inspect printed the access token")
			}

			// logout ends the session at the server: the refresh token the
			// CLI held no longer works there.
			rt := srv.LastRefreshToken()
			if !srv.RefreshAccepted(rt) {
				t.Fatal("the key's refresh token is not accepted before logout")
			}
			_, stderr, code := c.run(nil, "logout", "k")
			if srv.Sessions() != 0 || srv.RefreshAccepted(rt) {
				t.Errorf("logout (exit %d) left the session alive at the server: %s", code, stderr)
			}
			if st := refreshAtServer(t, srv, rt); st == http.StatusOK {
				t.Errorf("a refresh with the old refresh token still works after logout")
			}
			for _, s := range []string{lcPassword, lcClientSecret, rt, tok} {
				if strings.Contains(stderr, s) {
					t.Errorf("logout printed a secret")
				}
			}
			// The key has no tokens left: only a login helps (exit 3).
			if _, stderr, code := c.run(nil, "token", "k"); code != exitLoginNeeded {
				t.Errorf("token after logout: exit %d, want %d: %s", code, exitLoginNeeded, stderr)
			}
		})
	}
}
