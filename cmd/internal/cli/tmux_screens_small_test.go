//go:build !windows

package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// scrolled is every screen shown while j scrolls the active screen down to
// its end (no "↓ more"), at most most presses: one press at a time, each
// awaited until the screen moved. Presses sent at a fixed pace were all
// drawn at once on a busy machine, and the lines in between never captured.
// (A change of something else, a countdown, may stand for a press's: the
// next press then comes early, and a frame of one line's scroll is all that
// can be missed.) A toast wider than the screen covers the body's last
// lines, "↓ more" with them: dismiss it first (dismissToast).
func (s *tmuxSession) scrolled(most int) []string {
	s.t.Helper()
	screens := []string{s.capture()}
	for range most {
		before := screens[len(screens)-1]
		if !strings.Contains(before, "↓ more") {
			break
		}
		s.keys("j")
		screens = append(screens, s.waitFor("the screen after j", 5*time.Second, func(now string) bool { return now != before }))
	}
	return screens
}

// dismissToast waits for the toast that says text (wrapped or not), then
// presses k (a scroll up, nothing at the top) to take it off the screen:
// any key does.
func (s *tmuxSession) dismissToast(text string) {
	s.t.Helper()
	s.waitFor("the toast "+text, 5*time.Second, func(screen string) bool { return strings.Contains(screenText(screen), text) })
	s.keys("k")
	s.waitFor("the toast to go", 5*time.Second, func(screen string) bool { return !strings.Contains(screenText(screen), text) })
}

// urlBrokenInWord returns a word of screens that is a piece of u cut inside
// a word of it (not before a "/"), or "".
func urlBrokenInWord(screens []string, u string) string {
	for _, screen := range screens {
		for _, w := range strings.Fields(screen) {
			i := strings.Index(u, w)
			if w == u || len(w) < 4 || i < 0 {
				continue
			}
			end := i + len(w)
			if !(i == 0 || w[0] == '/') || !(end == len(u) || u[end] == '/') {
				return w
			}
		}
	}
	return ""
}

// issuerOf is the iss claim of a JWT.
func issuerOf(t *testing.T, jwt string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Iss string }
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Iss == "" {
		t.Fatalf("no iss: %v", err)
	}
	return claims.Iss
}

// TestTmuxKeyAndTokenScreensAtSmallSizes: what the app says of a key and a
// token, in a real terminal at 80×24 and 40×10: the new key's details say
// Last Used "not yet" and break the issuer only between the pieces of its
// path; the inspector checks the key's token against a JWKS URL typed
// after w; a pasted token's server row says its key would tell.
func TestTmuxKeyAndTokenScreensAtSmallSizes(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			t.Parallel()
			s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory", "BROWSER="}).start(w, h, "demo")
			s.waitText(10*time.Second, "Get API Key")
			s.keys("Enter")
			s.waitText(10*time.Second, "Token details")
			// The keys table, before the token is handed out.
			s.keys("2")
			screen := s.waitText(5*time.Second, "1 of 1 key", "demo")
			if !strings.Contains(screen, "not yet") || strings.Contains(screen, "never") {
				t.Errorf("the new key's Last Used does not read \"not yet\":\n%s", screen)
			}
			noCutLines(t, screen, w)
			s.keys("1")
			s.detailsRead(5 * time.Second)
			s.keys("c")
			token := s.buffer("shipkey-token")
			iss := issuerOf(t, token)
			s.dismissToast("Copied the access token")

			details := s.scrolled(h + 10)
			all := strings.Join(details, "\n")
			if !strings.Contains(all, strings.TrimPrefix(strings.Split(iss, "/realms")[0], "http://")) {
				t.Errorf("the details never show the issuer's host %s:\n%s", iss, all)
			}
			if word := urlBrokenInWord(details, iss); word != "" {
				t.Errorf("the issuer %s is broken inside a word (%q):\n%s", iss, word, all)
			}
			for _, screen := range details {
				noCutLines(t, screen, w)
			}

			// The inspector, the key's token checked against a JWKS URL.
			s.keys("g", "i")
			s.waitText(5*time.Second, "Claims inspector")
			s.keys("w")
			s.waitText(5*time.Second, "JWKS URL")
			s.keys("-l", iss+"/protocol/openid-connect/certs")
			s.keys("Enter")
			// The signature is checked again with those keys ("checking…"
			// until then): its outcome is what the scroll below looks for.
			screen = s.waitFor("the signature checked with the JWKS URL", 10*time.Second, func(screen string) bool {
				return strings.Contains(screen, "keys from") && !strings.Contains(screen, "checking")
			})
			noCutLines(t, screen, w)
			checked := strings.Join(s.scrolled(40), "\n")
			if !strings.Contains(checked, "verified (key") {
				t.Errorf("the key's token was not verified with the JWKS URL:\n%s", checked)
			}
			if strings.Contains(checked, "not asked") {
				t.Error("a key's token says its server was not asked")
			}

			// A pasted token: the server row says its key would tell.
			s.keys("p")
			s.waitText(5*time.Second, "token ›")
			if out, err := s.tmux("paste-buffer", "-b", "shipkey-token", "-t", "t"); err != nil {
				t.Fatalf("paste-buffer: %v: %s", err, out)
			}
			s.keys("Enter")
			s.waitText(10*time.Second, "pasted token")
			pasted := s.scrolled(60)
			words := strings.Join(strings.Fields(strings.Join(pasted, " ")), " ")
			if !strings.Contains(words, "server") || !strings.Contains(words, "not asked") {
				t.Errorf("a pasted token's server row is missing:\n%s", strings.Join(pasted, "\n"))
			}
			for _, screen := range pasted {
				noCutLines(t, screen, w)
			}
			s.keys("q")
		})
	}
}
