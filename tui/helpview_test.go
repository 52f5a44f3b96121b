package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The help screen shows every binding of the screen at any size: in columns
// that fit the width (none cut at the right edge) and, when taller than the
// screen, by scrolling with ↓/j, pgdn and G.
func TestHelpShowsEveryBindingByScrolling(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
			h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			for _, screen := range []string{"1", "2"} {
				h.press("esc", screen, "?")
				if !h.m.showHelp {
					t.Fatalf("screen %s: ? did not open the help", screen)
				}
				var want []string
				for _, g := range h.m.FullHelp() {
					for _, b := range g {
						if b.Enabled() {
							want = append(want, b.Help().Key+" ")
						}
					}
				}
				seen := ""
				for i := 0; i < 60; i++ {
					v := h.view()
					for _, l := range strings.Split(v, "\n") {
						if ansi.StringWidth(l) > size[0] {
							t.Fatalf("screen %s: a line wider than %d:\n%s", screen, size[0], v)
						}
						if strings.Contains(ansi.Strip(l), "…") && !strings.Contains(l, "more") && !strings.Contains(l, "•") {
							t.Errorf("screen %s: a help line is cut: %q", screen, ansi.Strip(l))
						}
					}
					seen += ansi.Strip(v)
					h.press("j")
				}
				for _, k := range want {
					if !strings.Contains(seen, k) {
						t.Errorf("screen %s at %dx%d: binding %q never shown", screen, size[0], size[1], k)
					}
				}
				h.press("?")
			}
		})
	}
}
