package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"filippo.io/age"
	gokeyring "github.com/zalando/go-keyring"
)

// TestRealKeyring runs against the OS keyring (a Secret Service on Linux)
// only when SHIPKEY_TEST_REAL_KEYRING=1; then a keyring that does not work is
// a failure. The CI script starts gnome-keyring under dbus-run-session for it.
//
// A key with tokens over 4 KiB, and a key of the old layout (its secrets in
// one JSON entry of its own) that moves into its file when used: the
// keyring holds the store key alone, and on Linux no item of shipkey's is
// over 2,560 bytes, Windows' limit (listed through the Secret Service).
func TestRealKeyring(t *testing.T) {
	t.Parallel()
	if os.Getenv("SHIPKEY_TEST_REAL_KEYRING") != "1" {
		t.Log("SHIPKEY_TEST_REAL_KEYRING is not 1: the real OS keyring is not exercised")
		return
	}
	e := newEnv(t, bigTokens)
	s := e.open(Options{Backend: BackendAuto, Keyring: osKeyring{}})
	if b := s.Backend(); b != BackendKeyring {
		t.Fatalf("auto chose %s; warning: %s", b, e.warn.String())
	}
	k := e.create(s, "real-keyring-test", true)
	old := e.create(s, "old-layout", true)
	kb := s.keyringBackendForTest()
	name, err := kb.entryName()
	if err != nil || name == "" {
		t.Fatalf("keyring.id: %q %v", name, err)
	}
	t.Cleanup(func() {
		for _, user := range []string{name, k.ID, old.ID} {
			_ = gokeyring.Delete(keyringService, user)
		}
	})
	if ts := e.token(s, "real-keyring-test"); len(ts.AccessToken) < 4096 {
		t.Fatalf("access token of %d bytes: the test needs one over 4 KiB", len(ts.AccessToken))
	}

	// The old layout: the key's secrets in one entry of their own, which the
	// Secret Service takes whatever their size.
	sec, _, err := kb.Get(old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := setOldEntry(osKeyring{}, old.ID, sec); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(kb.files().path(old.ID)); err != nil {
		t.Fatal(err)
	}
	s2 := e.open(Options{Backend: BackendAuto, Keyring: osKeyring{}})
	e.token(s2, "old-layout")
	if _, err := gokeyring.Get(keyringService, old.ID); !errors.Is(err, gokeyring.ErrNotFound) {
		t.Fatalf("the old layout's entry is still there: %v", err)
	}

	raw, err := gokeyring.Get(keyringService, name)
	if err != nil {
		t.Fatalf("the store key is not in the OS keyring: %v", err)
	}
	if _, err := age.ParseX25519Identity(strings.TrimSpace(raw)); err != nil {
		t.Fatalf("the store key's entry: %v", err)
	}
	if _, err := gokeyring.Get(keyringService, k.ID); !errors.Is(err, gokeyring.ErrNotFound) {
		t.Fatalf("a key's secrets are in an entry of their own: %v", err)
	}
	sizes := secretServiceItemSizes(t, keyringService)
	for user, n := range sizes {
		t.Logf("keyring item %s/%s: %d bytes", keyringService, user, n)
		if n > 2560 {
			t.Errorf("keyring item %s/%s holds %d bytes, over 2,560 (Windows' limit)", keyringService, user, n)
		}
	}

	if _, err := s2.Logout(context.Background(), "real-keyring-test"); err != nil {
		t.Fatal(err)
	}
	e.check(s2)
	for _, label := range []string{"real-keyring-test", "old-layout"} {
		if _, err := s2.Remove(context.Background(), label); err != nil {
			t.Fatal(err)
		}
	}
	if fileExists(kb.files().path(k.ID)) || fileExists(kb.files().path(old.ID)) {
		t.Fatal("a key's file is left after Remove")
	}
}
