//go:build !windows

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// TestTmuxEmptyStoreOpensWithoutUnlocking: the app on a store with no key
// and an encrypted secrets file not made yet draws its first frame with no
// passphrase asked; Welcome and the inspector open; the first key asks for
// the new passphrase inside the app, in a masked field, twice (a mismatch
// said under it), never on the plain terminal, at 80×24 and 40×10; then it
// lands on its token details, its secrets in the new encrypted file.
func TestTmuxEmptyStoreOpensWithoutUnlocking(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			emptyStoreFirstKey(t, srv, size[0], size[1])
		})
	}
}

func emptyStoreFirstKey(t *testing.T, srv *authtest.Server, width, height int) {
	h := newTmuxHome(t, []string{"SHIPKEY_SECRETS=file", "SHIPKEY_UNLOCK_MECH=none", "BROWSER="})
	s := h.start(80, 24)
	screen := s.waitText(10*time.Second, "Get API Key")
	if strings.Contains(screen, "assphrase") {
		t.Fatalf("a passphrase was asked before the first frame:\n%s", screen)
	}
	s.keys("Escape")
	s.waitText(5*time.Second, "No API keys yet")
	s.keys("3")
	s.waitText(5*time.Second, "Claims inspector")
	s.keys("Escape")
	s.waitText(5*time.Second, "No API keys yet")
	keyFile := filepath.Join(h.dir, "state", "secrets.key.age")
	if _, err := os.Stat(keyFile); err == nil {
		t.Fatal("a key file was made before a key was asked for")
	}

	// The first key: client credentials against the realm.
	s.keys("n")
	s.waitText(5*time.Second, "Get API Key", "‹ password ›")
	s.keys("BTab", "Right") // Auth URL → the grant: client credentials
	s.waitText(5*time.Second, "‹ client credentials ›")
	s.keys("Tab")
	s.keys("-l", srv.URL())
	s.keys("Tab", "Tab") // Realm keeps master
	s.keys("-l", authtest.DemoClientID)
	s.keys("Tab")
	s.keys("-l", authtest.DemoClientSecret)
	s.keys("Tab")
	s.keys("-l", "first")
	if width != 80 {
		if out, err := s.tmux("resize-window", "-t", "t", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height)); err != nil {
			t.Fatalf("resize-window: %v: %s", err, out)
		}
	}
	s.keys("C-s")
	// Inside the app: its header stays, the field masks what is typed.
	s.waitText(10*time.Second, "shipkey › Get API Key", "New passphrase")
	s.keys("-l", "a passphrase for the test")
	screen = s.waitText(5*time.Second, "•••")
	if strings.Contains(screen, "a passphrase for") {
		t.Fatalf("the passphrase shows as typed:\n%s", screen)
	}
	s.keys("Enter")
	s.waitText(5*time.Second, "Repeat passphrase")
	s.keys("-l", "another passphrase")
	s.keys("Enter")
	s.waitText(5*time.Second, "do not match", "New passphrase")
	s.keys("-l", "a passphrase for the test")
	s.keys("Enter")
	s.waitText(5*time.Second, "Repeat passphrase")
	s.keys("-l", "a passphrase for the test")
	s.keys("Enter")
	screen = s.waitText(15*time.Second, "Token details")
	if strings.Contains(screen, "passphrase for the test") {
		t.Fatalf("the passphrase shows:\n%s", screen)
	}
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatalf("no key file after the first key: %v", err)
	}
	// The key file opens with the passphrase set in the app.
	h.env = append(h.env, "SHIPKEY_PASSPHRASE=a passphrase for the test")
	if tok := h.cli("token", "first"); !strings.HasPrefix(tok, "eyJ") {
		t.Fatalf("shipkey token with the passphrase set in the app: %q", tok)
	}
	s.keys("q")
}
