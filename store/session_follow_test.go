package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestFollowerWhereNothingKeepsUnlocks: with SHIPKEY_UNLOCK_TIMEOUT=0 (this
// process only) there is no session to follow: the process says why and
// keeps the identity it unlocked until it ends, whatever another process
// locks.
func TestFollowerWhereNothingKeepsUnlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{Backend: BackendFile, Unlock: UnlockOptions{Timeout: -1, Passphrase: "process only"}})
	e.create(s, "k", false)
	ok, why := s.FollowSession(func(bool) { t.Error("a change told without a session") })
	if ok || !strings.Contains(why, EnvUnlockTimeout+"=0") {
		t.Fatalf("FollowSession = %v, %q; want false, naming %s=0", ok, why, EnvUnlockTimeout)
	}
	if _, err := e.open(Options{Backend: BackendFile}).Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Token(context.Background(), "k", TokenOptions{MinValid: time.Hour}); err != nil {
		t.Fatalf("a renewal after another process locked: %v", err)
	}
}
