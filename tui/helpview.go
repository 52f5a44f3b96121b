package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// helpGap is the space between two columns of the help screen.
const helpGap = 3

// helpContent lays the focused screen's bindings (FullHelp) out: a column
// per group where they all fit in width, else as many columns of equal
// width as fit, filled top to bottom, so that no binding is cut off at the
// right; what does not fit in height is scrolled (helpPane). A screen
// narrower than one column shows one, cut at the right edge by the pane.
func (m *Model) helpContent(width int) string {
	groups := m.FullHelp()
	h := m.help
	h.SetWidth(0) // measured here, never cut
	if grouped := h.FullHelpView(groups); lipgloss.Width(grouped) <= width {
		return "\n" + grouped // one column per group, as the screen groups them
	}
	var keys, descs []string
	kw, dw := 0, 0
	for _, g := range groups {
		for _, b := range g {
			if !b.Enabled() {
				continue
			}
			h := b.Help()
			keys, descs = append(keys, h.Key), append(descs, h.Desc)
			kw, dw = max(kw, lipgloss.Width(h.Key)), max(dw, lipgloss.Width(h.Desc))
		}
	}
	if len(keys) == 0 {
		return ""
	}
	colW := kw + 1 + dw
	cols := min(len(keys), max(1, (width+helpGap)/(colW+helpGap)))
	rows := (len(keys) + cols - 1) / cols
	st := m.help.Styles
	var b strings.Builder
	b.WriteString("\n")
	for r := range rows {
		for c := range cols {
			i := c*rows + r
			if i >= len(keys) {
				break
			}
			if c > 0 {
				b.WriteString(strings.Repeat(" ", helpGap))
			}
			b.WriteString(st.FullKey.Render(keys[i] + strings.Repeat(" ", kw-lipgloss.Width(keys[i]))))
			b.WriteString(" ")
			desc := descs[i]
			if c < cols-1 && i+rows < len(keys) {
				desc += strings.Repeat(" ", dw-lipgloss.Width(desc))
			}
			b.WriteString(st.FullDesc.Render(desc))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// helpView is the help screen's body, width × height, scrolled.
func (m *Model) helpView(width, height int) string {
	p := m.helpPane
	p.setSize(width, height)
	return p.view(m.helpContent(width))
}

// openHelp shows the help screen from its top.
func (m *Model) openHelp() {
	m.showHelp = true
	m.helpPane.vp.GotoTop()
}

// scrollHelp applies a scrolling key or wheel turn to the help screen.
func (m *Model) scrollHelp(msg tea.Msg) bool {
	m.helpPane.setSize(m.width, m.bodyHeight())
	return m.helpPane.scroll(msg, m.c.keys, m.helpContent(m.width), true)
}
