//go:build !windows

package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// apiHome is a home with key "mine" whose api_url is a resource server
// that introspects every token at the realm srv.
func apiHome(t *testing.T) (*tmuxHome, *authtest.Server, *authtest.ResourceServer) {
	t.Helper()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
	t.Cleanup(rs.Close)
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=plaintext"})
	h.newKey(srv, "mine")
	h.cli("keys", "set", "mine", "--api-url", rs.URL()+"/v1")
	return h, srv, rs
}

// requestField tabs to the Request screen's field name (at most a round).
func (s *tmuxSession) requestField(name string) { s.pressUntil("Tab", "› "+name, 8, focusLine) }

// TestTmuxRequestHistorySurvivesARestart: at 80×24 and 40×10, two requests
// sent from the Request screen (one with an X-Api-Key header and a token
// in its query) are in the state directory's requests.json, 0600, with no
// token, no credential header and no query token; the app started again
// lists them (ctrl+r) and recalls them with ↑ in the URL field.
func TestTmuxRequestHistorySurvivesARestart(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h, _, _ := apiHome(t)
			s := h.start(size[0], size[1])
			s.waitText(10*time.Second, "mine")
			s.keys("4")
			s.waitText(5*time.Second, "shipkey › Request")
			s.requestURL("shipments")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK")
			s.keys("Escape")
			s.waitText(5*time.Second, "› URL")
			s.requestURL("parcels?token=qsec")
			s.requestField("Headers")
			s.keys("-l", "X-Api-Key: header-secret")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK")
			// The history is written beside the request, in its own time
			// (the answer may come first), and q does not wait for it:
			// quit once both requests are in the file.
			path := filepath.Join(h.dir, "state", store.RequestsFile)
			var data []byte
			if !eventually(10*time.Second, func() bool {
				data, _ = os.ReadFile(path)
				return strings.Contains(string(data), "shipments") && strings.Contains(string(data), "parcels")
			}) {
				t.Fatalf("requests.json does not hold both requests:\n%s", data)
			}
			s.keys("q")
			s.waitFor("the app to exit", 10*time.Second, func(string) bool { return s.dead() })
			tok := strings.TrimSpace(h.cli("token", "mine"))
			for _, v := range []string{tok, "qsec", "header-secret", "X-Api-Key:", "Authorization:", "Bearer "} {
				if strings.Contains(string(data), v) {
					t.Errorf("requests.json holds %q:\n%s", v, data)
				}
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("requests.json: %v %v", err, fi.Mode())
			}

			s = h.start(size[0], size[1]) // the app again
			s.waitText(10*time.Second, "mine")
			s.keys("4")
			s.waitText(5*time.Second, "shipkey › Request")
			// The screen reads the history as it opens, in its own time
			// (↑ before that recalls nothing): ctrl+r lists it once read.
			s.keys("C-r")
			screen := s.waitText(5*time.Second, "0 saved, 2 sent", "GET shipments")
			noCutLines(t, screen, size[0])
			s.keys("Escape")
			s.waitText(5*time.Second, "› Key")
			s.requestField("URL")
			s.keys("Up")
			s.waitText(5*time.Second, "parcels", "history 1 of 2")
			s.keys("Up")
			s.waitText(5*time.Second, "shipments", "history 2 of 2")
			s.keys("C-s")
			s.waitText(10*time.Second, "200 OK")
			s.keys("q")
		})
	}
}

// TestTmuxRequestCopyAsCurlRuns: a POST with headers and a text body that
// starts with @ (curl's sign of a file name) sent from the Request screen, copied with ctrl+y (tmux buffer shipkey-curl),
// holds no token; run as pasted by sh, through the real shipkey curl and
// curl, it gets the answer the screen got: the same method, path, query,
// content type, body (its SHA-256) and header at the resource server.
func TestTmuxRequestCopyAsCurlRuns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is required in CI (.ci/test.sh installs it): apt-get install -y curl")
		}
		t.Skip("curl not installed (apt-get install -y curl); skipping the copied line's run")
	}
	h, _, rs := apiHome(t)
	s := h.start(80, 24)
	s.waitText(10*time.Second, "mine")
	s.keys("4")
	s.waitText(5*time.Second, "shipkey › Request")
	s.requestField("Method")
	s.pressUntil("Right", "‹ POST ›", 8, choiceLine) // GET → POST, each press awaited
	s.requestURL("shipments?ref=it's")
	s.requestField("Headers")
	s.keys("-l", "X-Trace: a b")
	s.keys("Enter")
	s.keys("-l", "Content-Type: text/plain")
	s.requestField("Body")
	body := "@/etc/hostname: it's text, not a file"
	s.keys("-l", body)
	s.keys("C-s")
	s.waitText(10*time.Second, "200 OK")
	sum := sha256.Sum256([]byte(body))
	s.keys("/")
	s.keys("-l", "sha256")
	s.waitFor("the body's SHA-256 in the answer", 5*time.Second, func(screen string) bool {
		return strings.Contains(strings.Join(strings.Fields(screen), ""), `"body_sha256":"`+hex.EncodeToString(sum[:])+`"`)
	})
	s.keys("Enter")
	s.keys("C-y")
	s.waitText(5*time.Second, "Copied the shipkey curl command")
	line := s.buffer("shipkey-curl")
	tok := strings.TrimSpace(h.cli("token", "mine"))
	if strings.Contains(line, tok) || !strings.HasPrefix(line, "shipkey curl --key mine -- ") {
		t.Fatalf("copied %q", line)
	}

	before := rs.Count("accepted")
	ctx, cancel := context.WithTimeout(context.Background(), patience(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Env = append(append(os.Environ(), h.env...), "PATH="+filepath.Dir(h.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	var echo authtest.Echo
	if err := json.Unmarshal(out, &echo); err != nil {
		t.Fatalf("%s: not the resource server's echo: %v\n%s", line, err, out)
	}
	want := authtest.Echo{Method: "POST", Path: "/v1/shipments", Query: "ref=it's", ContentType: "text/plain",
		BodyBytes: int64(len(body)), BodySHA256: hex.EncodeToString(sum[:])}
	if echo.Method != want.Method || echo.Path != want.Path || echo.Query != want.Query || echo.ContentType != want.ContentType ||
		echo.BodyBytes != want.BodyBytes || echo.BodySHA256 != want.BodySHA256 || echo.Headers["X-Trace"] != "a b" || echo.Subject == "" {
		t.Fatalf("%s\nthe API saw %+v\nwant %+v with X-Trace: a b", line, echo, want)
	}
	if rs.Count("accepted") != before+1 {
		t.Fatalf("the resource server accepted %d requests, want 1", rs.Count("accepted")-before)
	}
	s.keys("q")
}
