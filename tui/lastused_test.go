package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
)

// A key whose token has not been handed out since it was made reads "not
// yet" in the app's table and in `keys list` (both draw KeyColumns' cell),
// not "never"; once copied, how long ago.
func TestLastUsedOfANewKeySaysNotYet(t *testing.T) {
	t.Parallel()
	now := t0
	for _, st := range []CellStyle{Live, Words} {
		row := NewKeyRow(store.Key{ID: "id-1", Label: "new"})
		if got := KeyColumns[ColLastUsed].Cell(&row, now, st); got != notHandedOut {
			t.Errorf("style %d: a new key's Last Used is %q, want %q", st, got, notHandedOut)
		}
		row = NewKeyRow(store.Key{ID: "id-1", Label: "new", LastUsed: now.Add(-3 * time.Minute)})
		if got := KeyColumns[ColLastUsed].Cell(&row, now, st); got != "3 min ago" {
			t.Errorf("style %d: Last Used 3 min ago reads %q", st, got)
		}
	}

	h := newHarness(t, func(f *fakeStore) { f.add("fresh", "demo", time.Time{}) })
	h.press("2")
	row0 := ""
	for _, l := range strings.Split(h.view(), "\n") {
		if strings.Contains(l, "fresh") {
			row0 = l
		}
	}
	if !strings.Contains(row0, notHandedOut) || strings.Contains(row0, "never") {
		t.Fatalf("a new key's row: %q", row0)
	}
}
