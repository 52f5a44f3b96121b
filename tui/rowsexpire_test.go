package tui

import (
	"strings"
	"testing"
	"time"
)

// rowOf is the line of the view that shows label's row.
func rowOf(h *harness, label string) string {
	for _, l := range strings.Split(h.view(), "\n") {
		if strings.Contains(l, " "+label+" ") {
			return l
		}
	}
	return ""
}

// Every row's expiry moves with the clock, not only the key on screen's
// (which auto-refresh renews): a key whose access token expires while
// another key's details are shown reads "expired" when the table is shown
// again, and one that expires while the table is open changes on the
// tick; at 80×24 and 60×15 (at 40×10 the table has no expiry column).
func TestEveryRowExpiresWithTheClock(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {60, 15}} {
		h := newHarness(t, func(f *fakeStore) {
			f.add("aa", "demo", time.Time{}) // access expires at t0+5m
			f.add("bb", "demo", time.Time{}) // at t0+5m
			f.clock.Advance(3 * time.Minute)
			f.add("cc", "demo", time.Time{}) // at t0+8m
			f.clock.Advance(-3 * time.Minute)
		})
		h.send(windowSize(size[0], size[1]))
		h.press("1") // aa's details: auto-refresh renews aa alone
		for range 6 * 60 {
			h.clock.Advance(time.Second)
			fire[tickMsg](h)
		}
		h.press("2")
		if r := rowOf(h, "bb"); !strings.Contains(r, "expired") {
			t.Errorf("%dx%d: bb's row after its expiry: %q", size[0], size[1], r)
		}
		if r := rowOf(h, "cc"); strings.Contains(r, "expired") || !strings.Contains(r, "in 2:00") {
			t.Errorf("%dx%d: cc's row before its expiry: %q", size[0], size[1], r)
		}
		for range 3 * 60 {
			h.clock.Advance(time.Second)
			fire[tickMsg](h)
		}
		if r := rowOf(h, "cc"); !strings.Contains(r, "expired") {
			t.Errorf("%dx%d: cc's row after its expiry, with the table open: %q", size[0], size[1], r)
		}
	}
}
