//go:build !windows

package cli

import (
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
// the new passphrase on the terminal handed back, then lands on its token
// details, its secrets in the new encrypted file.
func TestTmuxEmptyStoreOpensWithoutUnlocking(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
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
	s.keys("C-s")
	s.waitText(10*time.Second, "New passphrase for ")
	s.keys("-l", "a passphrase for the test")
	s.keys("Enter")
	s.waitText(5*time.Second, "Repeat the new passphrase")
	s.keys("-l", "a passphrase for the test")
	s.keys("Enter")
	s.waitText(15*time.Second, "Token details", "first")
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatalf("no key file after the first key: %v", err)
	}
	s.keys("q")
}
