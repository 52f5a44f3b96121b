package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	gokeyring "github.com/zalando/go-keyring"
)

// TestRealKeyring runs against the OS keyring (a Secret Service on Linux)
// only when SHIPKEY_TEST_REAL_KEYRING=1; then a keyring that does not work is
// a failure. The CI script starts gnome-keyring under dbus-run-session for it.
func TestRealKeyring(t *testing.T) {
	t.Parallel()
	if os.Getenv("SHIPKEY_TEST_REAL_KEYRING") != "1" {
		t.Log("SHIPKEY_TEST_REAL_KEYRING is not 1: the real OS keyring is not exercised")
		return
	}
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendAuto, Keyring: osKeyring{}})
	if b := s.Backend(); b != BackendKeyring {
		t.Fatalf("auto chose %s; warning: %s", b, e.warn.String())
	}
	k := e.create(s, "real-keyring-test", true)
	t.Cleanup(func() { _ = gokeyring.Delete(keyringService, k.ID) })

	raw, err := gokeyring.Get(keyringService, k.ID)
	if err != nil {
		t.Fatalf("entry not in the OS keyring: %v", err)
	}
	var sec keySecrets
	if err := json.Unmarshal([]byte(raw), &sec); err != nil || sec.ClientSecret != testClientSecret || sec.RefreshToken == "" || sec.Password == "" {
		t.Fatalf("keyring entry: %v", err)
	}
	e.token(s, "real-keyring-test")
	if _, err := s.Logout(context.Background(), "real-keyring-test"); err != nil {
		t.Fatal(err)
	}
	e.check(s)
	if _, err := s.Remove(context.Background(), "real-keyring-test"); err != nil {
		t.Fatal(err)
	}
	if _, err := gokeyring.Get(keyringService, k.ID); !errors.Is(err, gokeyring.ErrNotFound) {
		t.Fatalf("entry left after Remove: %v", err)
	}
}
