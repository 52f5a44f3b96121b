package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/table"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/internal/text"
)

// Theme says how the terminal looks, as far as styling is concerned.
type Theme struct {
	// Dark is true on a dark background (the default until the terminal
	// answers tea.RequestBackgroundColor).
	Dark bool
	// NoColor drops every colour (NO_COLOR is set); bold, underline and the
	// reverse-video cursor stay.
	NoColor bool
	// Plain drops all styling: the views are plain text with no escape
	// sequence at all (golden files, tests).
	Plain bool
}

// Styles is every style the UI uses, built once from a Theme by NewStyles and
// handed to the screens; there is no package-level style.
type Styles struct {
	Theme Theme

	App       lipgloss.Style // the whole frame
	Title     lipgloss.Style // "shipkey" in the header
	Crumb     lipgloss.Style // the screen name in the header
	Badge     lipgloss.Style // "demo server"
	Subtle    lipgloss.Style // secondary text
	FieldName lipgloss.Style // names in name/value lists
	Value     lipgloss.Style
	Secret    lipgloss.Style // masked or revealed tokens
	Selected  lipgloss.Style // the selected menu item
	Focused   lipgloss.Style // the label of the focused form field
	Error     lipgloss.Style
	Warn      lipgloss.Style
	OK        lipgloss.Style
	Toast     lipgloss.Style
	Section   lipgloss.Style // section headings (inspector, details)
	ClaimName lipgloss.Style
	ClaimTime lipgloss.Style
	ClaimList lipgloss.Style
	Spinner   lipgloss.Style
	Code      lipgloss.Style // a device code to type: big and boxed

	// Progress colours; nil when Plain or NoColor.
	Good, Fair, Poor color.Color

	Help      help.Styles
	Table     table.Styles
	TextInput textinput.Styles
	TextArea  textarea.Styles
}

// NewStyles builds the styles for theme.
func NewStyles(theme Theme) *Styles {
	s := &Styles{Theme: theme}
	plain := lipgloss.NewStyle()
	if theme.Plain {
		s.App, s.Title, s.Crumb, s.Badge, s.Subtle = plain, plain, plain, plain, plain
		s.FieldName, s.Value, s.Secret, s.Selected, s.Focused = plain, plain, plain, plain, plain
		s.Error, s.Warn, s.OK, s.Toast, s.Section = plain, plain, plain, plain, plain
		s.ClaimName, s.ClaimTime, s.ClaimList, s.Spinner = plain, plain, plain, plain
		s.Code = plain.Border(lipgloss.RoundedBorder()).Padding(0, 2)
		s.Help = help.Styles{}
		s.Table = table.Styles{Header: plain.Padding(0, 1), Cell: plain.Padding(0, 1)}
		s.TextInput = textinput.Styles{Cursor: textinput.CursorStyle{Shape: tea.CursorBlock}}
		s.TextArea = textarea.Styles{Cursor: textarea.CursorStyle{Shape: tea.CursorBlock}}
		return s
	}
	ld := lipgloss.LightDark(theme.Dark)
	c := func(light, dark string) color.Color {
		if theme.NoColor {
			return nil
		}
		return ld(lipgloss.Color(light), lipgloss.Color(dark))
	}
	fg := func(col color.Color) lipgloss.Style {
		if col == nil {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(col)
	}
	accent := c("#5A56E0", "#7D79F6")
	subtle := c("#737373", "#8A8A8A")
	s.App = plain
	s.Title = fg(accent).Bold(true)
	s.Crumb = fg(subtle)
	s.Badge = fg(c("#B35C00", "#FFB454")).Bold(true)
	s.Subtle = fg(subtle)
	s.FieldName = fg(subtle)
	s.Value = plain
	s.Secret = fg(c("#8A5A00", "#E6C07B"))
	s.Selected = fg(accent).Bold(true)
	s.Focused = fg(accent).Bold(true)
	s.Error = fg(c("#C4002F", "#FF6B6B")).Bold(true)
	s.Warn = fg(c("#A36A00", "#F2C94C"))
	s.OK = fg(c("#1D7A34", "#6FCF97"))
	s.Toast = fg(c("#1D7A34", "#6FCF97"))
	s.Section = fg(accent).Bold(true).Underline(true)
	s.ClaimName = fg(c("#1F5FA8", "#79B8FF"))
	s.ClaimTime = fg(c("#7A3E9D", "#D2A8FF"))
	s.ClaimList = fg(c("#1D7A34", "#85E89D"))
	s.Spinner = fg(accent)
	s.Code = fg(accent).Bold(true).Border(lipgloss.RoundedBorder()).BorderForeground(subtle).Padding(0, 2)
	s.Good, s.Fair, s.Poor = c("#1D7A34", "#3FB950"), c("#A36A00", "#D29922"), c("#C4002F", "#F85149")

	keyStyle := fg(c("#6B6B6B", "#A0A0A0"))
	descStyle := fg(c("#9A9A9A", "#6A6A6A"))
	sepStyle := fg(c("#C8C8C8", "#4A4A4A"))
	s.Help = help.Styles{
		Ellipsis: sepStyle, ShortKey: keyStyle, ShortDesc: descStyle, ShortSeparator: sepStyle,
		FullKey: keyStyle, FullDesc: descStyle, FullSeparator: sepStyle,
	}
	s.Table = table.Styles{
		Header:   lipgloss.NewStyle().Bold(true).Padding(0, 1),
		Cell:     lipgloss.NewStyle().Padding(0, 1),
		Selected: fg(accent).Bold(true).Reverse(theme.NoColor),
	}
	ti := textinput.DefaultStyles(theme.Dark)
	if theme.NoColor {
		ti = textinput.Styles{}
	}
	ti.Cursor.Blink = false // no timers while idle
	ti.Cursor.Shape = tea.CursorBlock
	if accent != nil {
		ti.Cursor.Color = accent
	}
	s.TextInput = ti
	ta := textarea.DefaultStyles(theme.Dark)
	if theme.NoColor {
		ta = textarea.Styles{}
	}
	ta.Focused.CursorLine = lipgloss.NewStyle() // the cursor is enough
	ta.Cursor.Blink = false
	ta.Cursor.Shape = tea.CursorBlock
	if accent != nil {
		ta.Cursor.Color = accent
	}
	s.TextArea = ta
	return s
}

// barColor picks the progress colour for the fraction of lifetime left.
func (s *Styles) barColor(left float64) color.Color {
	return [...]color.Color{s.Good, s.Fair, s.Poor}[barBand(left)]
}

// barBand is the colour band of a bar with left of its life left: 0 good,
// 1 fair, 2 poor.
func barBand(left float64) int {
	switch {
	case left >= 0.5:
		return 0
	case left >= 0.2:
		return 1
	default:
		return 2
	}
}

// newTextInput builds a text input styled for s: static cursor (no blink
// timer), and no virtual cursor at all when Plain.
func (s *Styles) newTextInput(prompt string) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.SetStyles(s.TextInput)
	ti.SetVirtualCursor(!s.Theme.Plain)
	return ti
}

// newTextArea builds a text area styled for s, as newTextInput: no prompt,
// no line numbers, static cursor, no virtual cursor when Plain.
func (s *Styles) newTextArea() textarea.Model {
	ta := textarea.New()
	ta.Prompt = ""
	ta.ShowLineNumbers = false
	ta.SetStyles(s.TextArea)
	ta.SetVirtualCursor(!s.Theme.Plain)
	return ta
}

// show renders clean text in st: the way untrusted text (a claim, a label, a
// server's words) reaches the screen, cleaned once where it entered.
func show(st lipgloss.Style, c text.Clean) string { return st.Render(c.String()) }
