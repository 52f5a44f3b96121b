package store

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFollowerLocksWithTheSession: a long-running process that follows the
// session (serve) drops its unlocked identity when the session's unlock
// ends, by `shipkey lock` or by the idle timeout: it then hands out the
// token it handed out before while that will do, refuses what needs the
// secrets (a renewal) with ErrSessionLocked, says so once, never asks a
// passphrase, and takes the identity again from the session after another
// process unlocked it.
func TestFollowerLocksWithTheSession(t *testing.T) {
	t.Parallel()
	requireKernel(t)
	for _, how := range []string{"shipkey lock", "idle timeout"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			idle := time.Hour
			if how == "idle timeout" {
				idle = 2 * time.Second
			}
			e := newEnv(t, nil)
			unlocker := UnlockOptions{Mechanism: MechKernel, Timeout: idle, Passphrase: "follow passphrase"}
			// Another process made the key and so unlocked the session.
			maker := e.open(Options{Backend: BackendFile, Unlock: unlocker})
			e.create(maker, "k", false)

			var mu sync.Mutex
			var changes []bool
			s := e.open(Options{Backend: BackendFile, Unlock: UnlockOptions{Mechanism: MechKernel, Timeout: idle},
				Passphrase: func(string) (string, error) {
					t.Error("a follower asked for the passphrase")
					return "", errors.New("no terminal")
				}})
			if err := s.Unlock(); err != nil {
				t.Fatal(err)
			}
			if ok, why := s.FollowSession(func(locked bool) {
				mu.Lock()
				defer mu.Unlock()
				changes = append(changes, locked)
			}); !ok {
				t.Fatalf("FollowSession: not following: %s", why)
			}
			changed := func() []bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(changes)
			}
			ctx := context.Background()
			first, err := s.Token(ctx, "k", TokenOptions{MarkUsed: true})
			if err != nil {
				t.Fatal(err)
			}

			keyPath := s.fileBackend().keyPath()
			wrapped, err := os.ReadFile(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			desc := identityCacheDesc(keyPath, wrapped)
			if how == "shipkey lock" {
				if held, err := e.open(Options{Backend: BackendFile}).Lock(); err != nil || !held {
					t.Fatalf("Lock = %v, %v", held, err)
				}
			} else {
				// Nothing uses the unlock: the kernel drops it (a search
				// does not extend its timeout).
				for i := 0; ; i++ {
					if _, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0); err != nil {
						break
					}
					if i == 300 {
						t.Fatal("the kernel kept the unlock 30 s past a 2 s idle timeout")
					}
					time.Sleep(100 * time.Millisecond)
				}
			}

			// Locked: the token handed out before is handed out again...
			for range 3 {
				ts, err := s.Token(ctx, "k", TokenOptions{MarkUsed: true})
				if err != nil || ts.AccessToken != first.AccessToken {
					t.Fatalf("locked, not the token handed out before: %v", err)
				}
				if ts.RefreshToken != "" || ts.IDToken != "" {
					t.Fatal("locked, the token was read from the secrets (its refresh token came with it)")
				}
			}
			s.fileBackend().mu.Lock()
			dropped := s.fileBackend().identity == nil
			s.fileBackend().mu.Unlock()
			if !dropped {
				t.Error("locked, the follower still holds the identity")
			}
			// ...but what needs the secrets is refused, in words that say what to do.
			_, err = s.Token(ctx, "k", TokenOptions{MinValid: time.Hour})
			if !errors.Is(err, ErrSessionLocked) || !errors.Is(err, ErrBackendLocked) || !strings.Contains(err.Error(), "shipkey unlock") {
				t.Fatalf("locked, a renewal: %v", err)
			}
			e.clk.Advance(5 * time.Minute) // the token's life: due now
			if _, err := s.Token(ctx, "k", TokenOptions{}); !errors.Is(err, ErrSessionLocked) {
				t.Fatalf("locked, once the token handed out is due: %v", err)
			}
			if got := changed(); !slices.Equal(got, []bool{true}) {
				t.Fatalf("changes told while locked: %v, want one lock", got)
			}

			// Another process unlocks: the follower takes the identity
			// again and renews.
			if err := e.open(Options{Backend: BackendFile, Unlock: unlocker}).Unlock(); err != nil {
				t.Fatal(err)
			}
			ts, err := s.Token(ctx, "k", TokenOptions{})
			if err != nil || ts.AccessToken == first.AccessToken {
				t.Fatalf("unlocked again, a renewal: %v", err)
			}
			if got := changed(); !slices.Equal(got, []bool{true, false}) {
				t.Fatalf("changes told: %v, want a lock and an unlock", got)
			}
		})
	}
}
