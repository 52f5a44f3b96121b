//go:build !windows

package cli

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// The device code as the sign-in screen draws it, letter-spaced in a box:
// "│  B C D F - G H J K  │".
var boxedCode = regexp.MustCompile(`│\s+((?:[A-Z] ){4}- (?:[A-Z] ){3}[A-Z])\s+│`)

// TestTmuxGrantChoiceAndDeviceCode runs `shipkey demo` in tmux: the form's
// grant field switches to device code (the user's fields go), the sign-in
// screen shows the code and a moving countdown, c puts the code in tmux's
// buffer by OSC 52, and an approval on the demo realm's device page (sent
// by the test, as a person's browser would) lands on the token details.
func TestTmuxGrantChoiceAndDeviceCode(t *testing.T) {
	t.Parallel()
	s := startTmuxApp(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}, "demo")

	// The demo fills every field; the focus starts on the grant.
	s.waitText(10*time.Second, "Get API Key", "Grant", "‹ password ›", "Username", "Password")
	s.keys("Right")
	s.waitText(5*time.Second, "‹ client credentials ›", "Client Secret")
	s.keys("Right")
	screen := s.waitText(5*time.Second, "‹ device code ›", "Device code: approve")
	for _, gone := range []string{"Username", "Password"} {
		if strings.Contains(screen, gone) {
			t.Fatalf("the device code form still shows %s:\n%s", gone, screen)
		}
	}

	s.keys("Enter")
	screen = s.waitText(10*time.Second, "Sign in", "Enter the code", "Code expires", "c copy code")
	m := boxedCode.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no boxed code on the screen:\n%s", screen)
	}
	code := strings.ReplaceAll(m[1], " ", "")
	open := regexp.MustCompile(`Open\s+(http://127\.0\.0\.1:\d+/\S+/device)\s`).FindStringSubmatch(screen)
	if open == nil {
		t.Fatalf("no verification URL on the screen:\n%s", screen)
	}

	// The countdown moves with the clock.
	countdown := regexp.MustCompile(`Code expires\s+in (\d+:\d\d)`)
	first := countdown.FindStringSubmatch(screen)
	if first == nil {
		t.Fatalf("no countdown:\n%s", screen)
	}
	s.waitFor("the countdown to move", 5*time.Second, func(screen string) bool {
		m := countdown.FindStringSubmatch(screen)
		return m != nil && m[1] != first[1]
	})

	// c copies the code: OSC 52 lands in tmux's paste buffer.
	s.keys("c")
	s.waitText(5*time.Second, "Copied the device code")
	s.waitFor("the code in tmux's buffer", 5*time.Second, func(string) bool {
		out, err := s.tmux("show-buffer")
		return err == nil && strings.TrimSpace(out) == code
	})

	// A person approves on the device page.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.PostForm(open[1], url.Values{
		"user_code": {code}, "username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}, "action": {"approve"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the device page answered %s", resp.Status)
	}
	// The grant polls every 5 s (Keycloak's interval).
	s.waitText(20*time.Second, "Token details", "grant device code", "Access expires")

	// The keys table names the grant.
	s.keys("2")
	s.waitText(5*time.Second, "Grant", "device")
}

// TestTmuxDeviceCodeEscCancels: esc on the sign-in screen gives up the
// grant and returns to the form with nothing stored.
func TestTmuxDeviceCodeEscCancels(t *testing.T) {
	t.Parallel()
	s := startTmuxApp(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}, "demo")
	s.waitText(10*time.Second, "Get API Key", "‹ password ›")
	s.chooseGrant("device code")
	s.keys("Enter")
	s.waitText(10*time.Second, "Sign in", "Enter the code")
	s.keys("2") // modal: the keys that open other screens stand aside
	s.keys("Escape")
	s.waitText(5*time.Second, "Get API Key", "Cancelled: nothing was stored.", "‹ device code ›")
	s.keys("Escape") // leave the form: the welcome screen has no key
	s.waitText(5*time.Second, "No API keys yet")
}

// TestTmuxBrowserSignIn runs `shipkey demo` in tmux with the browser
// sign-in grant: the app pushes its authorization request (PAR, PKCE,
// loopback redirect) and opens $BROWSER (a script that notes it) on a
// one-time loopback link that redirects to the realm's authorization URL, shows "Waiting for the browser…" with a
// countdown, and when the person signs in on that page (the test posts the
// realm's form, following its redirect to the app's loopback callback, as a
// browser would) lands on the token details of a key that uses the grant.
func TestTmuxBrowserSignIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" > "+opened+".tmp && mv "+opened+".tmp "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startTmuxApp(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER=" + script}, "demo")
	s.waitText(10*time.Second, "Get API Key", "‹ password ›")
	s.chooseGrant("browser sign-in")
	screen := s.waitText(5*time.Second, "‹ browser sign-in ›", "Browser sign-in (authorization code with PKCE)")
	for _, gone := range []string{"Username", "Password"} {
		if strings.Contains(screen, gone) {
			t.Fatalf("the browser sign-in form still shows %s:\n%s", gone, screen)
		}
	}
	s.keys("Enter")
	s.waitText(10*time.Second, "Sign in", "Waiting for the browser…", "Waits until")

	var target string
	s.waitFor("$BROWSER to be opened", 10*time.Second, func(string) bool {
		b, err := os.ReadFile(opened)
		target = strings.TrimSpace(string(b))
		return err == nil && target != ""
	})
	// $BROWSER's command line (readable by every local user) holds only the
	// app's one-time loopback start link, no query at all.
	u, err := url.Parse(target)
	if err != nil || u.Hostname() != "127.0.0.1" || !strings.HasPrefix(u.Path, "/start/") || u.RawQuery != "" {
		t.Fatalf("$BROWSER was opened on %q: want the one-time loopback start link", target)
	}
	// It leads to the realm's authorization URL. The demo realm advertises
	// PAR, so the request (PKCE challenge, loopback redirect, state) was
	// pushed to the realm first and that URL has only the client id and the
	// request_uri (RFC 9126 §4).
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start, err := noFollow.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	_ = start.Body.Close()
	target = start.Header.Get("Location")
	u, err = url.Parse(target)
	q := u.Query()
	if err != nil || start.StatusCode != http.StatusFound || u.Hostname() != "127.0.0.1" || q.Get("client_id") != authtest.DemoClientID ||
		!strings.HasPrefix(q.Get("request_uri"), "urn:ietf:params:oauth:request_uri:") ||
		q.Has("code_challenge") || q.Has("redirect_uri") || q.Has("state") {
		t.Fatalf("the start link answered %d to %q: want the realm's authorization URL with only the client id and a pushed request_uri", start.StatusCode, target)
	}

	// A person signs in: the realm's page takes the form and redirects the
	// browser to the app's loopback callback.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.PostForm(target, url.Values{
		"username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}, "action": {"approve"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in and callback answered %s", resp.Status)
	}
	s.waitText(10*time.Second, "Token details", "grant browser sign-in", "Access expires")
	s.keys("2")
	s.waitText(5*time.Second, "Grant", "browser")
}

// TestTmuxSigninEscCancelledInSight: at 80×24, 60×15 and 40×10 esc on the
// browser sign-in and on the device code screen takes the form back
// scrolled to the line that says nothing was stored (below the fields, out
// of sight at 40×10 before).
func TestTmuxSigninEscCancelledInSight(t *testing.T) {
	t.Parallel()
	for _, grant := range []struct{ name, choice string }{{"browser", "browser sign-in"}, {"device", "device code"}} {
		t.Run(grant.name, func(t *testing.T) {
			t.Parallel()
			eachSmallSize(t, func(t *testing.T, w, h int) {
				s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}).start(w, h, "demo")
				s.waitText(10*time.Second, "Get API Key", "‹ password ›")
				s.chooseGrant(grant.choice)
				s.keys("Enter")
				s.waitText(10*time.Second, "Sign in")
				s.keys("Escape")
				s.waitFor("the cancellation in sight", 10*time.Second, func(screen string) bool {
					return strings.Contains(screenText(screen), "Cancelled: nothing was stored.")
				})
				s.keys("C-c")
			})
		})
	}
}

// TestTmuxFormGeneralErrorInSight: at 80×24, 60×15 and 40×10 a failure
// that belongs to no field of the form (a server answering 500) is said
// below the fields, and the form scrolls to it.
func TestTmuxFormGeneralErrorInSight(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the realm database is down", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	eachSmallSize(t, func(t *testing.T, w, h int) {
		s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(w, h, "demo")
		s.waitText(10*time.Second, "Get API Key", "password")
		s.keys("Tab")
		s.waitText(5*time.Second, "f1 help")
		s.keys("C-u")
		s.keys("-l", srv.URL)
		s.keys("BTab")
		s.waitText(5*time.Second, "? help")
		s.keys("Enter")
		s.waitFor("the failure in sight", 10*time.Second, func(screen string) bool {
			return strings.Contains(screenText(screen), "the realm database is down")
		})
		s.keys("C-c")
	})
}

// chooseGrant moves the form's grant choice (focused) with → until it shows
// name; the grants' order is the form's.
func (s *tmuxSession) chooseGrant(name string) { s.pressUntil("Right", "‹ "+name, 8, choiceLine) }
