package tui

import (
	"testing"
	"time"
)

// Changes by other shipkey processes show within a tick, and nothing is
// read when nothing changed.
func TestLiveReloadOnStamp(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.st.mu.Lock()
	before := h.st.keysCalls
	h.st.mu.Unlock()
	for range 3 {
		fire[tickMsg](h)
	}
	h.st.mu.Lock()
	if h.st.keysCalls != before || h.st.stampCalls < 3 {
		t.Fatalf("idle ticks read the keys %d times (stamp %d)", h.st.keysCalls-before, h.st.stampCalls)
	}
	h.st.mu.Unlock()
	h.st.add("from-the-cli", "u", time.Time{}) // another process
	fire[tickMsg](h)
	h.mustShow("from-the-cli", "4 of 4 keys")
	h.st.mu.Lock()
	delete(h.st.keys, "ci-bot")
	h.st.writes++
	h.st.mu.Unlock()
	fire[tickMsg](h)
	h.mustNotShow("ci-bot")
}

// The shown key's tokens follow a refresh or logout by another process.
func TestLiveReloadDetails(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	old := h.m.details.tokens.AccessToken
	h.clock.Advance(time.Minute)
	h.st.mu.Lock()
	h.st.renew("demo")
	h.st.writes++
	h.st.mu.Unlock()
	fire[tickMsg](h)
	if h.m.details.tokens.AccessToken == old {
		t.Fatal("the details kept the old token after another process refreshed it")
	}
	h.mustShow("in 5:00")
}

// One key-list read per action.
func TestOneKeyListLoadPerAction(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	for _, keys := range [][]string{{"c"}, {"r"}, {"2", "*"}} {
		h.st.mu.Lock()
		before := h.st.keysCalls
		h.st.mu.Unlock()
		h.press(keys...)
		fire[tickMsg](h) // the stamp changed by our own write: no second read
		h.st.mu.Lock()
		n := h.st.keysCalls - before
		h.st.mu.Unlock()
		if n != 1 {
			t.Fatalf("%v read the key list %d times", keys, n)
		}
	}
}
