package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// pane is the scrolling body of a screen (a bubbles viewport): the screen
// renders all its lines and the pane shows the part that fits. Only the
// scroll offset is state; View works on a copy, so a view never changes the
// model. Keys: ↑/↓ (k/j), pgup/pgdn, g/G (home/end), and the mouse wheel.
type pane struct {
	c             *common
	vp            viewport.Model
	width, height int
}

func newPane(c *common) pane {
	vp := viewport.New()
	vp.MouseWheelEnabled = false // handled in scroll, with the same steps everywhere
	vp.KeyMap = viewport.KeyMap{}
	return pane{c: c, vp: vp}
}

// The signs that a screen's content goes on beyond what is in sight.
const (
	moreAbove = "↑ more"
	moreBelow = "↓ more"
)

// markMore writes moreAbove at the right end of the first line when content
// lies above, and moreBelow on the last when content lies below; what the
// sign covers is cut with "…". lines are the visible lines, width wide.
func markMore(lines []string, width int, above, below bool, st lipgloss.Style) []string {
	put := func(i int, mark string) {
		w := lipgloss.Width(mark)
		if width < w+4 {
			return
		}
		l := lines[i]
		switch room := width - w - 1; {
		case lipgloss.Width(strings.TrimRight(ansi.Strip(l), " ")) <= room:
			l = ansi.Truncate(l, room, "") // only padding gives way
		case lipgloss.Width(l) > room:
			l = ansi.Truncate(l, room-1, "…")
		}
		lines[i] = l + strings.Repeat(" ", max(1, width-w-lipgloss.Width(l))) + st.Render(mark)
	}
	if len(lines) == 0 {
		return lines
	}
	if below {
		put(len(lines)-1, moreBelow)
	}
	if above && len(lines) > 1 {
		put(0, moreAbove)
	}
	return lines
}

func (p *pane) setSize(width, height int) {
	p.width, p.height = max(1, width), max(1, height)
	p.vp.SetWidth(p.width)
	p.vp.SetHeight(p.height)
}

// set gives the pane its content, and returns its lines. The viewport
// keeps the offset within the content.
func (p *pane) set(content string) []string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	p.vp.SetContentLines(lines)
	return lines
}

// view renders content in the pane at its offset, exactly width × height,
// each line cut to the width (never wrapped into garbage).
func (p pane) view(content string) string {
	all := p.set(content)
	off := min(p.vp.YOffset(), max(0, len(all)-p.height))
	end := min(len(all), off+p.height)
	lines := append([]string(nil), all[off:end]...)
	for i, l := range lines {
		if lipgloss.Width(l) > p.width {
			lines[i] = ansi.Truncate(l, p.width, "…")
		}
	}
	if p.c != nil {
		lines = markMore(lines, p.width, off > 0, end < len(all), p.c.styles.Subtle)
	}
	return fitBlock(strings.Join(lines, "\n"), p.width, p.height)
}

// scroll applies a scrolling key or wheel turn to content's pane; lines
// says whether ↑/↓ scroll (false where they move a cursor or a focus).
// It reports whether msg was a scroll.
func (p *pane) scroll(msg tea.Msg, km KeyMap, content string, lines bool) bool {
	p.set(content)
	switch msg := msg.(type) {
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			p.vp.ScrollUp(3)
		case tea.MouseWheelDown:
			p.vp.ScrollDown(3)
		default:
			return false
		}
		return true
	case tea.KeyPressMsg:
		switch {
		case lines && key.Matches(msg, km.ScrollUp):
			p.vp.ScrollUp(1)
		case lines && key.Matches(msg, km.ScrollDown):
			p.vp.ScrollDown(1)
		case key.Matches(msg, km.PageUp):
			p.vp.PageUp()
		case key.Matches(msg, km.PageDown):
			p.vp.PageDown()
		case key.Matches(msg, km.Top):
			p.vp.GotoTop()
		case key.Matches(msg, km.Bottom):
			p.vp.GotoBottom()
		default:
			return false
		}
		return true
	}
	return false
}

// follow scrolls content's pane the least needed to show line (a focused
// field, a menu cursor).
func (p *pane) follow(content string, line int) {
	p.set(content)
	switch off := p.vp.YOffset(); {
	case line < off:
		p.vp.SetYOffset(line)
	case line >= off+p.height:
		p.vp.SetYOffset(line - p.height + 1)
	}
}
