package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// pendingRenewTimers counts the renewal timers the app has armed and not
// yet seen fire (only the newest generation counts: older ones are dropped
// when they fire).
func pendingRenewTimers(h *harness) int {
	n := 0
	for _, m := range h.timers {
		if r, ok := m.(renewTickMsg); ok && r.gen == h.m.renew.gen {
			n++
		}
	}
	return n
}

// refreshes is the keys the fake store was asked to refresh, in order.
func refreshes(f *fakeStore) []string {
	var out []string
	for _, c := range f.Calls() {
		if l, ok := strings.CutPrefix(c, "refresh "); ok {
			out = append(out, l)
		}
	}
	return out
}

// The open app renews every key that has a way to renew, not only the one
// on screen: with the keys table shown, two keys whose access tokens are
// due at 4:30 (5-minute tokens) are renewed through the backend when the
// one timer armed for the soonest due renewal fires, without reading the
// key list again; their rows show the new expiry.
func TestOpenAppRenewsKeysNotOnScreen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{})
		f.add("staging", "demo", time.Time{})
	})
	h.press("2")
	if n := pendingRenewTimers(h); n != 1 {
		t.Fatalf("%d renewal timers armed for two keys; want one, for the soonest", n)
	}
	walks := h.st.keysCalls
	h.clock.Advance(4*time.Minute + 31*time.Second)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"prod", "staging"}) {
		t.Fatalf("renewed %q; want prod and staging", got)
	}
	if h.st.keysCalls != walks {
		t.Errorf("the renewals read the whole key list again (%d walks)", h.st.keysCalls-walks)
	}
	for _, l := range []string{"prod", "staging"} {
		if r := rowOf(h, l); !strings.Contains(r, "in 5:00") {
			t.Errorf("%s's row after its renewal: %q", l, r)
		}
	}
	// The next renewals are due 4:30 after these: one timer again, and
	// nothing renewed before it fires.
	if n := pendingRenewTimers(h); n != 1 {
		t.Fatalf("%d renewal timers armed after the renewals; want one", n)
	}
	h.clock.Advance(time.Minute)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); len(got) != 2 {
		t.Errorf("renewed again before due: %q", got)
	}
}

// Neither token is assumed to end first: a key whose refresh window (30
// min) ends long before its access token (15 days, as the Shipping Service
// issues them) is renewed ahead of the refresh window's end, and one whose
// access token ends first ahead of that.
func TestRenewalRunsAheadOfWhicheverEndsFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("long", "demo", time.Time{})
		k := f.keys["long"]
		k.Token.AccessExpiresAt = t0.Add(15 * 24 * time.Hour)
		k.Token.JWTExpiresAt = time.Time{}
		k.Token.RefreshExpiresAt = t0.Add(30 * time.Minute)
		f.keys["long"] = k
		f.add("short", "demo", time.Time{}) // access 5 min, refresh 30 min
	})
	h.clock.Advance(5 * time.Minute)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"short"}) {
		t.Fatalf("renewed %q at 5:00; want short alone", got)
	}
	h.clock.Advance(24*time.Minute + 31*time.Second) // 29:31: inside the refresh window's margin
	for range 20 {
		if fire[renewTickMsg](h) == 0 {
			break
		}
	}
	if got := refreshes(h.st); !slices.Contains(got, "long") {
		t.Fatalf("the key whose refresh window ends first was not renewed before it ended: %q", got)
	}
}

// A failed renewal says so on the status line and on the key's row, and
// one that retrying cannot fix is not tried again while the key's tokens
// stay the same: no retry storm, however often the timer fires. A key
// without a way to renew (logged out) is never tried.
func TestFailedRenewalShowsAndIsNotRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{})
		f.add("gone", "demo", time.Time{})
		k := f.keys["gone"]
		k.LoggedOut = true
		f.keys["gone"] = k
		f.refreshErr = &auth.Error{Kind: auth.KindInvalidClient, Op: "refresh", Msg: "the client secret is wrong"}
	})
	h.press("2")
	h.clock.Advance(4*time.Minute + 31*time.Second)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"prod"}) {
		t.Fatalf("renewed %q; want prod alone", got)
	}
	h.mustShow("could not renew API key \"prod\"")
	if r := rowOf(h, "prod"); !strings.Contains(r, "renewal failed") {
		t.Errorf("prod's row after a failed renewal: %q", r)
	}
	for range 5 {
		h.clock.Advance(10 * time.Second)
		fire[renewTickMsg](h)
		fire[tickMsg](h)
	}
	// Another process uses prod: the key list is read again (this store
	// does not say what changed), and prod is still not tried again.
	if err := h.st.MarkUsed("prod"); err != nil {
		t.Fatal(err)
	}
	h.send(storeChangedMsg{})
	fire[renewTickMsg](h)
	if got := refreshes(h.st); len(got) != 1 {
		t.Errorf("a failed renewal was tried again: %q", got)
	}
	if r := rowOf(h, "prod"); !strings.Contains(r, "renewal failed") {
		t.Errorf("prod's row after the key list was read again: %q", r)
	}
}

// The renewal of a key used by another process comes from what changed
// (ChangesSince), not from a walk of every key: a key renewed elsewhere is
// due again at its new time, and its old due time renews nothing.
func TestRenewalFollowsChangedKeys(t *testing.T) {
	t.Parallel()
	b := &changedKeys{}
	h := newHarnessWith(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{})
		f.add("staging", "demo", time.Time{})
	}, func(c *config) {
		b.fakeStore = c.backend.(*fakeStore)
		c.backend = b
	})
	h.press("2")
	walks := h.st.keysCalls
	// Another process renews prod at 2:00.
	h.clock.Advance(2 * time.Minute)
	h.st.mu.Lock()
	k, _, _ := h.st.renew("prod")
	h.st.mu.Unlock()
	b.changed = []store.Key{k}
	h.send(storeChangedMsg{})
	if h.st.keysCalls != walks {
		t.Fatalf("a change of one key read the whole list again")
	}
	h.clock.Advance(2*time.Minute + 31*time.Second) // 4:31: staging due, prod not (due 6:30)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"staging"}) {
		t.Fatalf("renewed %q at 4:31; want staging alone", got)
	}
	h.clock.Advance(2 * time.Minute) // 6:31: prod due
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"staging", "prod"}) {
		t.Fatalf("renewed %q at 6:31; want prod too", got)
	}
}

// changedKeys is a fake store that says which keys changed.
type changedKeys struct {
	*fakeStore
	changed []store.Key
}

func (c *changedKeys) ChangesSince(store.Stamp) (store.Changes, error) {
	st, err := c.Stamp()
	return store.Changes{Stamp: st, Keys: c.changed}, err
}

// The key on the details screen is renewed by that screen (which says
// "refreshing…"), once: the background renews the others. Once the screen
// is left, the background takes it over.
func TestDetailsKeyRenewedOnceByItsScreen(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{})
		f.add("staging", "demo", time.Time{})
	})
	h.press("1")
	if h.m.active != screenDetails || h.m.details.key.Label != "prod" {
		t.Fatalf("1 opened %v %q", h.m.active, h.m.details.key.Label)
	}
	h.clock.Advance(4*time.Minute + 31*time.Second)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"staging"}) {
		t.Fatalf("the background renewed %q; want staging alone", got)
	}
	fire[tickMsg](h)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); !slices.Equal(got, []string{"staging", "prod"}) {
		t.Fatalf("renewed %q; want prod once, by its details", got)
	}

	// Auto-refresh off (a): the details screen does not renew; left for
	// the keys table, the background does not either.
	h.press("a")
	h.clock.Advance(4*time.Minute + 31*time.Second)
	fire[tickMsg](h)
	fire[renewTickMsg](h)
	h.press("2")
	fire[renewTickMsg](h)
	if got := refreshes(h.st); len(got) != 2 {
		t.Fatalf("renewed with auto-refresh off: %q", got)
	}
	// On again (back on the details screen, a; then the table): due keys
	// are renewed, prod by the background now that its screen is left.
	h.press("1", "a", "2")
	for range 3 {
		h.clock.Advance(time.Second)
		fire[renewTickMsg](h)
	}
	if got := refreshes(h.st); !slices.Contains(got[2:], "prod") || !slices.Contains(got[2:], "staging") {
		t.Fatalf("after auto-refresh was turned on again: %q", got)
	}
}

// A renewal that failed in a way that may pass (the realm unreachable: a
// laptop waking before its network) is tried again halfway to the key's
// deadline, a few times in its last 30 s and never once a tick; once the
// realm answers, the key is renewed and its row no longer says it failed.
// Before, the key was left to expire in the open app.
func TestRenewalTriedAgainAfterANetworkFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{}) // access 5 min: due at 4:30
		f.refreshErr = &auth.Error{Kind: auth.KindNetwork, Op: "refresh", Msg: "cannot reach auth.example.com"}
	})
	h.press("2")
	h.clock.Advance(4*time.Minute + 30*time.Second)
	fire[renewTickMsg](h)
	if got := refreshes(h.st); len(got) != 1 {
		t.Fatalf("renewed %q at 4:30; want prod once", got)
	}
	h.mustShow("could not renew API key \"prod\"")
	// Ticks until the expiry while the realm is down: a few tries, each
	// halfway to 5:00, none more often.
	for range 30 {
		h.clock.Advance(time.Second)
		fire[renewTickMsg](h)
		fire[tickMsg](h)
	}
	n := len(refreshes(h.st))
	if n < 2 || n > 5 {
		t.Fatalf("%d tries in the 30 s before the expiry while the realm was down; want a few (2–5)", n)
	}
	// The realm answers again before the expiry: the next try renews.
	h = newHarness(t, func(f *fakeStore) {
		f.add("prod", "demo", time.Time{})
		f.refreshErr = &auth.Error{Kind: auth.KindNetwork, Op: "refresh", Msg: "cannot reach auth.example.com"}
	})
	h.press("2")
	h.clock.Advance(4*time.Minute + 30*time.Second)
	fire[renewTickMsg](h)
	h.st.mu.Lock()
	h.st.refreshErr = nil
	h.st.mu.Unlock()
	for range 20 {
		h.clock.Advance(time.Second)
		fire[renewTickMsg](h)
	}
	if got := refreshes(h.st); len(got) != 2 {
		t.Fatalf("renewals %q; want the failed one and one that worked", got)
	}
	if r := rowOf(h, "prod"); strings.Contains(r, "renewal failed") || !strings.Contains(r, "in 4:5") {
		t.Errorf("prod's row after the realm came back: %q", r)
	}
}
