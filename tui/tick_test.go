package tui

import (
	"testing"
	"time"
)

// watched makes the harness's store watched (as Run does for a real store
// through inotify): the tick then only wakes when the text changes. The
// channel is closed: the harness runs commands in line, and a listen on it
// ends at once.
func watched(c *config) {
	ch := make(chan struct{})
	close(ch)
	c.changes = ch
}

// yearTokens gives the demo key a token and a refresh window of a year:
// the details' countdowns show days, hours and minutes.
func yearTokens(f *fakeStore) {
	ts := f.tokens["demo"]
	ts.ExpiresIn, ts.RefreshExpiresIn = 365*24*3600, 400*24*3600
	ts.AccessExpiresAt = ts.ObtainedAt.Add(365 * 24 * time.Hour)
	ts.JWTExpiresAt = ts.AccessExpiresAt
	ts.RefreshExpiresAt = ts.ObtainedAt.Add(400 * 24 * time.Hour)
}

// lastDelay fires the pending ticks and returns the delay of the tick
// scheduled after them.
func lastDelay(t *testing.T, h *harness) time.Duration {
	t.Helper()
	h.delays = nil
	if n := fire[tickMsg](h); n == 0 {
		t.Fatal("no tick pending")
	}
	if len(h.delays) == 0 {
		t.Fatal("no tick scheduled after the tick")
	}
	return h.delays[len(h.delays)-1]
}

// openYearDetails opens the details of a key whose token lasts a year,
// obtained two hours ago: every time shown moves once a minute.
func openYearDetails(t *testing.T) *harness {
	t.Helper()
	h := newHarnessWith(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}); yearTokens(f) }, watched)
	h.clock.Advance(2 * time.Hour)
	h.press("1")
	h.mustShow("(2h ago)", "in 364d 22h 00m")
	return h
}

// Token details whose text changes once a minute: a second after the tick
// that moved it (text that just changed is looked at again a second later)
// the next tick is at its next change ("(2h 1m ago)" a minute after it was
// obtained); no tick and no frame in between.
func TestTickSleepsUntilTheTextChanges(t *testing.T) {
	t.Parallel()
	h := openYearDetails(t)
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d != time.Second {
		t.Fatalf("the tick after the text changed is %v away, want 1s", d)
	}
	h.mustShow("(2h ago)", "in 364d 21h 59m")
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d != 58*time.Second {
		t.Fatalf("the tick after an unchanged \"364d 21h 59m\" is %v away, want 58s (the text's next change)", d)
	}
	h.clock.Advance(58 * time.Second)
	if d := lastDelay(t, h); d != time.Second {
		t.Fatalf("the next tick is %v away, want 1s", d)
	}
	h.mustShow("(2h 1m ago)", "in 364d 21h 59m")
}

// A countdown that shows seconds ticks every second, also when watched.
func TestTickEverySecondWhileSecondsShow(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) }, watched)
	h.press("1")
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d != time.Second {
		t.Fatalf("a M:SS countdown's next tick is %v away, want 1s", d)
	}
	h.mustShow("in 4:59")
}

// Without a watch of the store the tick also polls its stamp: every second.
func TestUnwatchedStorePollsEverySecond(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}); yearTokens(f) })
	h.clock.Advance(2 * time.Hour)
	h.press("1")
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d != time.Second {
		t.Fatalf("unwatched: the next tick is %v away, want 1s", d)
	}
}

// A key press while the tick sleeps brings it back within a second (the
// screen may now show seconds), and auto-refresh still fires on time.
func TestSleepingTickWakesOnInputAndForRefresh(t *testing.T) {
	t.Parallel()
	h := openYearDetails(t)
	h.clock.Advance(time.Second)
	lastDelay(t, h)
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d <= time.Second {
		t.Fatalf("the tick did not sleep (%v)", d)
	}
	h.delays = nil
	h.press("2") // the keys table
	if len(h.delays) != 1 || h.delays[0] > time.Second {
		t.Fatalf("after a key the ticks scheduled are %v, want one within a second", h.delays)
	}
	// An unchanging screen: the tick sleeps again after a second.
	lastDelay(t, h)
	h.clock.Advance(time.Second)
	if d := lastDelay(t, h); d <= time.Second {
		t.Fatalf("an unchanging screen ticks again in %v", d)
	}
}
