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
	vp            viewport.Model
	width, height int
}

func newPane() pane {
	vp := viewport.New()
	vp.MouseWheelEnabled = false // handled in scroll, with the same steps everywhere
	vp.KeyMap = viewport.KeyMap{}
	return pane{vp: vp}
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
	lines := p.set(content)
	off := min(p.vp.YOffset(), max(0, len(lines)-p.height))
	lines = lines[off:min(len(lines), off+p.height)]
	for i, l := range lines {
		if lipgloss.Width(l) > p.width {
			lines[i] = ansi.Truncate(l, p.width, "…")
		}
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
