//go:build !windows

package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// requestURL moves the Request screen's focus to the URL field (tab, at
// most a round of the fields), empties it and types u into it.
func (s *tmuxSession) requestURL(u string) {
	s.t.Helper()
	s.requestField("URL")
	s.keys("C-u")
	s.keys("-l", u)
	s.waitText(5*time.Second, u)
}

// edit goes from the answer back to the fields (focus where it was).
func (s *tmuxSession) edit() {
	s.t.Helper()
	s.keys("Escape")
	s.waitText(5*time.Second, "ctrl+s sends with the key's token")
}

// TestTmuxRequestDemo: in `shipkey demo` at 80×24 and 60×15, 4 opens the
// Request screen on the demo's API; ctrl+s gets 200; a large JSON answer
// scrolls to its last object; a hostile answer (clear screen, OSC 52, C1,
// bidi, CR, as raw bytes and as JSON) is shown as inert text: the frame
// stays, tmux gets no clipboard write (set-clipboard on, so a live OSC 52
// would make a buffer) and the CR overwrites nothing.
func TestTmuxRequestDemo(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {60, 15}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(size[0], size[1], "demo")
			if out, err := s.tmux("set", "-g", "set-clipboard", "on"); err != nil {
				t.Fatalf("set-clipboard: %v: %s", err, out)
			}
			s.waitText(10*time.Second, "Get API Key")
			s.keys("Enter")
			s.waitText(10*time.Second, "Token details")
			s.keys("4")
			screen := s.waitText(5*time.Second, "shipkey › Request", "› Key", "demo", "GET", "http://127.0.0.1:")
			if !regexp.MustCompile(`URL +http://127\.0\.0\.1:\d+`).MatchString(screen) {
				t.Fatalf("the URL is not the demo API's:\n%s", screen)
			}
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK", "Content-Type: application/json", `"method": "GET"`)

			// A large JSON answer, pretty-printed, scrolled to its end.
			s.edit()
			s.requestURL("/test/large")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK", "[", "↓ more")
			s.keys("G")
			s.waitText(5*time.Second, `"name": "shipment-01999"`, "↑ more")
			s.keys("g")
			s.waitText(5*time.Second, "200 OK", "↓ more")

			// Raw control bytes, as text.
			s.edit()
			s.requestURL("/test/hostile?raw")
			s.keys("C-s")
			screen = s.waitText(10*time.Second, "200 OK", `evil\x1b[2J\x1b[H`)
			all := strings.Join(strings.Fields(screen), "")
			for _, w := range []string{`copy\x1b]52;c;ZXZpbA==\x07me`, `\u009b31mred`, `\u202eesrever`} {
				if !strings.Contains(all, w) {
					t.Errorf("%q is not shown as text:\n%s", w, screen)
				}
			}
			if !strings.Contains(all, "overwritten") {
				t.Errorf("the CR moved the cursor:\n%s", screen)
			}
			if lines := strings.Split(screen, "\n"); !strings.HasPrefix(lines[0], "shipkey › Request") {
				t.Fatalf("the frame was cleared or moved:\n%s", screen)
			}
			// JSON escapes of the same bytes stay escapes.
			s.edit()
			s.requestURL("/test/hostile")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK", `"name": "evil\u001b[2J\u001b[H"`, `"note": "copy\u001b]52;c;ZXZpbA==\u0007me"`)
			s.keys("G")
			s.waitText(5*time.Second, `"cr": "over\rwritten"`)
			names, _ := s.tmux("list-buffers", "-F", "#{buffer_name}")
			for _, name := range strings.Fields(names) {
				if out, _ := s.tmux("show-buffer", "-b", name); strings.Contains(out, "evil") {
					t.Fatalf("the answer's OSC 52 reached tmux's clipboard (buffer %s)", name)
				}
			}
			s.keys("q")
		})
	}
}

// TestTmuxRequestRenewsARevokedToken: a key of the user's own store whose
// api_url is a resource server that introspects every token at the realm;
// the Request screen starts there and takes a path. After a 200,
// the access token is revoked at the realm (RFC 7009): the next send is
// refused 401, the token renewed, and the request sent again: the screen
// says "401 → renewed → 200 OK". An API that keeps refusing gets exactly
// two requests and its 401 is shown, not retried.
func TestTmuxRequestRenewsARevokedToken(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {60, 15}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h, srv, rs := apiHome(t)
			s := h.start(size[0], size[1])
			s.waitText(10*time.Second, "mine")
			s.keys("4")
			// The URL is the key's api_url; a path goes after it.
			s.waitText(5*time.Second, "shipkey › Request", "› Key", "mine", rs.URL()+"/v1")
			s.requestURL("shipments")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK", `"path": "/v1/shipments"`)
			if rs.Count("accepted") != 1 {
				t.Fatalf("the API accepted %d requests, want 1", rs.Count("accepted"))
			}

			tok := strings.TrimSpace(h.cli("token", "mine"))
			resp, err := http.PostForm(srv.Issuer()+"/protocol/openid-connect/revoke",
				url.Values{"token": {tok}, "client_id": {authtest.DemoClientID}, "client_secret": {authtest.DemoClientSecret}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("revoke: HTTP %d", resp.StatusCode)
			}
			s.keys("C-s") // sends again from the answer
			s.waitText(10*time.Second, "401 → renewed → 200 OK", `"path": "/v1/shipments"`)
			if n := rs.Count("refused"); n != 1 {
				t.Fatalf("the API refused %d requests, want 1 (the revoked token)", n)
			}
			if tok2 := strings.TrimSpace(h.cli("token", "mine")); tok2 == tok {
				t.Fatal("the store still hands out the revoked token")
			}

			rs.RefuseNext(2)
			before := rs.Count("requests")
			s.keys("C-s")
			s.waitText(10*time.Second, "401 → renewed → 401 Unauthorized (not retried)", "WWW-Authenticate:")
			if n := rs.Count("requests") - before; n != 2 {
				t.Fatalf("%d requests reached the API, want 2 (one retry, never more)", n)
			}
			s.keys("q")
		})
	}
}

// TestTmuxRequestAudienceAndFilter: at 80×24, against a resource server
// that takes only tokens for shipping-dpop, the key's own token is refused
// (renewed once, not retried); the Audience field gets one by token
// exchange and the API answers 200 with that aud; / then filters the
// answer's body to the lines holding the text, and esc clears it.
func TestTmuxRequestAudienceAndFilter(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret, Audience: authtest.DemoDPoPClientID})
	t.Cleanup(rs.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.newKey(srv, "mine")
	h.cli("keys", "set", "mine", "--api-url", rs.URL()+"/v1")
	s := h.start(80, 24)
	s.waitText(10*time.Second, "mine")
	s.keys("4")
	s.waitText(5*time.Second, "shipkey › Request", "› Key", "Audience")
	s.keys("C-s")
	s.waitText(10*time.Second, "401 → renewed → 401 Unauthorized (not retried)")
	s.edit()
	s.requestField("Audience")
	s.keys("-l", authtest.DemoDPoPClientID)
	s.keys("C-s")
	s.waitText(10*time.Second, "200 OK", "· key mine · audience "+authtest.DemoDPoPClientID, `"aud": [`)
	s.keys("/")
	s.keys("-l", "AUD")
	screen := s.waitText(5*time.Second, `lines hold "aud"`, `"aud": [`)
	if strings.Contains(screen, `"method"`) {
		t.Fatalf("the filter shows a line without aud:\n%s", screen)
	}
	s.keys("Escape")
	s.waitText(5*time.Second, `"method": "GET"`)
	s.keys("q")
}
