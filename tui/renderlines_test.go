package tui

import (
	"strings"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
)

// Our copy of Bubble Tea's renderer draws again only the lines whose text
// changed (third_party/bubbletea/PATCH.md): that is right only when each
// line of a frame draws the same cells alone as within the whole frame
// (no style left open across a line's end). Every screen, styled, in both
// themes.
func TestEveryFrameDrawsLineByLine(t *testing.T) {
	t.Parallel()
	for _, dark := range []bool{true, false} {
		h := newHarnessWith(t, func(f *fakeStore) {
			f.add("demo", "demo", time.Time{})
			f.add("ops", "ops", time.Time{})
		}, func(c *config) { c.theme = Theme{Dark: dark} })
		frames := map[string]string{"welcome": h.m.View().Content}
		for _, step := range []struct{ name, key string }{
			{"details", "1"}, {"keys", "2"}, {"inspector", "3"}, {"help", "?"}, {"back", "?"}, {"form", "n"},
		} {
			h.press(step.key)
			frames[step.name] = h.m.View().Content
		}
		for name, frame := range frames {
			whole := uv.NewScreenBuffer(h.m.width, h.m.height)
			uv.NewStyledString(frame).Draw(whole, whole.Bounds())
			byLine := uv.NewScreenBuffer(h.m.width, h.m.height)
			for y, l := range strings.Split(frame, "\n") {
				uv.NewStyledString(l).Draw(byLine, uv.Rect(0, y, h.m.width, 1))
			}
			for y := range h.m.height {
				for x := range h.m.width {
					if a, b := whole.CellAt(x, y), byLine.CellAt(x, y); !a.Equal(b) {
						t.Fatalf("dark %v, %s: cell %d,%d differs drawn line by line: %+v, whole: %+v", dark, name, x, y, b, a)
					}
				}
			}
		}
		if !strings.Contains(frames["details"], "\x1b[") {
			t.Fatal("the frames carry no style: the test shows nothing")
		}
	}
}
