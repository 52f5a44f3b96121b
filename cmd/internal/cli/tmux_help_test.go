//go:build !windows

package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTmuxHelpScrollsOnSmallScreens: in a real terminal at 80×24, 60×15 and
// 40×10, the keys table's help shows every binding, none cut at the right
// edge, by scrolling (j) where it is taller than the screen.
func TestTmuxHelpScrollsOnSmallScreens(t *testing.T) {
	t.Parallel()
	want := []string{"open", "filter", "next sort column", "copy", "copy header", "rename", "delete", "default",
		"get API key", "token details", "inspector", "back", "quit", "f1"}
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			s := newTmuxHome(t, []string{"SHIPKEY_SECRETS=memory"}).start(size[0], size[1], "demo")
			s.waitText(10*time.Second, "Get API Key")
			s.keys("Enter")
			s.waitText(10*time.Second, "Token details")
			s.keys("2")
			s.waitText(5*time.Second, "API keys")
			s.keys("?")
			s.waitText(5*time.Second, "Help")
			seen := strings.Join(s.scrolled(40), "\n")
			for _, w := range want {
				if !strings.Contains(seen, w) {
					t.Errorf("%dx%d: %q never shown in the help; last screen:\n%s", size[0], size[1], w, s.capture())
				}
			}
			for _, l := range strings.Split(seen, "\n") {
				if strings.HasSuffix(strings.TrimRight(l, " "), "…") && !strings.Contains(l, "•") {
					t.Errorf("%dx%d: a help line is cut: %q", size[0], size[1], l)
				}
			}
			s.keys("q")
		})
	}
}
