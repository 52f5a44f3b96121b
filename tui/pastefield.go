package tui

import (
	"strconv"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/internal/text"
)

// pasteField is the inspector's paste field: a token of up to maxPaste
// bytes, pasted in one bracketed paste (tea.PasteMsg) or, from a terminal
// or multiplexer that sends it without bracketed paste, one key press a
// character. Its work is linear in the text: a character is appended to a
// buffer, and the field shows only the end of it, one line, whatever its
// length (a bubbles textinput measured and re-laid out the whole value on
// every key and every frame: a 64 KiB token typed in took minutes).
type pasteField struct {
	c           *common
	prompt      string
	placeholder string
	buf         []byte
	width       int
	focused     bool
	// work counts the bytes the field handled (appended, or shown): what
	// TestPasteOf64KiBIsLinear bounds.
	work int
}

// maxPaste is the most the field takes; what comes after it is dropped.
const maxPaste = 64 << 10

func newPasteField(c *common, prompt, placeholder string) pasteField {
	return pasteField{c: c, prompt: prompt, placeholder: placeholder}
}

func (p *pasteField) Focus()            { p.focused = true }
func (p *pasteField) Blur()             { p.focused = false }
func (p *pasteField) SetWidth(w int)    { p.width = w }
func (p *pasteField) Value() string     { return string(p.buf) }
func (p *pasteField) SetValue(s string) { p.buf = append(p.buf[:0], s...) }

// add appends s, up to maxPaste bytes in all (never half a character).
func (p *pasteField) add(s string) {
	if room := maxPaste - len(p.buf); len(s) > room {
		s = s[:room]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	p.work += len(s)
	p.buf = append(p.buf, s...)
}

// Update takes typed or pasted text: printable keys, a bracketed paste,
// backspace (the last character) and ctrl+u (all of it).
func (p *pasteField) Update(msg tea.Msg) {
	switch msg := msg.(type) {
	case tea.PasteMsg:
		p.add(msg.Content)
	case tea.KeyPressMsg:
		switch {
		case msg.String() == "backspace":
			if _, n := utf8.DecodeLastRune(p.buf); n > 0 {
				p.buf = p.buf[:len(p.buf)-n]
			}
		case msg.String() == "ctrl+u":
			p.buf = p.buf[:0]
		case key.Matches(msg, p.c.keys.Enter):
		case msg.Text != "":
			p.add(msg.Text)
		}
	}
}

// View is the prompt and the end of the text that fits, "…" before it when
// it is longer, and its size once it is long; only the bytes shown are read.
func (p *pasteField) View() string {
	st := p.c.styles.TextInput.Focused
	if !p.focused {
		st = p.c.styles.TextInput.Blurred
	}
	head := st.Prompt.Render(p.prompt)
	if len(p.buf) == 0 {
		return head + st.Placeholder.Render(p.placeholder)
	}
	note := ""
	if len(p.buf) > 256 {
		note = "  (" + strconv.Itoa(len(p.buf)) + " bytes)"
	}
	room := max(4, p.width-lipgloss.Width(p.prompt)-lipgloss.Width(note))
	// A character is at most 4 bytes and 2 cells wide: the tail that can
	// show is within the last 4×room bytes.
	tail := p.buf[max(0, len(p.buf)-4*room):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	p.work += len(tail)
	shown := text.Safe(string(tail))
	if w := ansi.StringWidth(shown); w > room || len(tail) < len(p.buf) {
		if w+1 > room {
			shown = ansi.TruncateLeft(shown, w+1-room, "")
		}
		shown = "…" + shown
	}
	return head + st.Text.Render(shown) + p.c.styles.Subtle.Render(note)
}
