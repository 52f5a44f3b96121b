package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// welcome is the start screen: the product name, the default key with its
// state, and a small menu of the ways on.
type welcome struct {
	c             *common
	width, height int
	cursor        int
	keys          *keyIndex
	current       string     // the default (or current) key's label
	curKey        *store.Key // that key whole, when known (its user and realm)
	loaded        bool
	loadErr       text.Clean
	pane          pane
}

type menuItem struct {
	title, hint string
	act         action
}

func (w *welcome) menu() []menuItem {
	return []menuItem{
		{"Get API Key", "n", actOpenForm{}},
		{"API keys", "2", actOpenKeys{}},
		{"Inspect a token", "3", actInspectPaste{}},
		{"Call the API", "4", actOpenRequest{}},
		{"Help", "?", actToggleHelp{}},
		{"Quit", "q", actQuit{}},
	}
}

func newWelcome(c *common) *welcome { return &welcome{c: c, pane: newPane(c)} }

func (w *welcome) SetSize(width, height int) {
	w.width, w.height = width, height
	w.pane.setSize(width, height)
}
func (w *welcome) Capturing() bool { return false }

// setKeys records the loaded keys.
func (w *welcome) setKeys(keys *keyIndex, err error) {
	w.keys, w.loaded = keys, true
	w.loadErr = text.Clean{}
	if err != nil {
		w.loadErr = text.Sanitize(err.Error())
	}
}

func (w *welcome) Update(msg tea.Msg) (action, tea.Cmd) {
	content, _ := w.content()
	if w.pane.scroll(msg, w.c.keys, content, false) {
		return nil, nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil, nil
	}
	items := w.menu()
	switch {
	case key.Matches(k, w.c.keys.Up):
		w.cursor = (w.cursor + len(items) - 1) % len(items)
	case key.Matches(k, w.c.keys.Down):
		w.cursor = (w.cursor + 1) % len(items)
	case key.Matches(k, w.c.keys.Enter):
		return items[w.cursor].act, nil
	default:
		return nil, nil
	}
	content, line := w.content()
	w.pane.follow(content, line)
	return nil, nil
}

func (w *welcome) View() string {
	content, _ := w.content()
	return w.pane.view(content)
}

// content is every line of the screen, and the line of the menu cursor.
func (w *welcome) content() (string, int) {
	s := w.c.styles
	cursorLine := 0
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString("  " + s.Title.Render("shipkey") + s.Subtle.Render(" · OAuth 2.0 tokens and API keys for the Shipping Service API") + "\n\n")
	switch {
	case !w.loadErr.IsEmpty():
		b.WriteString("  " + show(s.Error, text.Concat(text.Trusted("Cannot read the keys: "), w.loadErr)) + "\n")
	case !w.loaded:
		b.WriteString("  " + s.Subtle.Render("Loading keys…") + "\n")
	case w.keys.len() == 0:
		b.WriteString("  " + s.Subtle.Render("No API keys yet. Get one to start.") + "\n")
	default:
		row, ok := w.keys.find(w.current)
		if !ok {
			b.WriteString("  " + s.Subtle.Render("No default key; pick one in API keys (*).") + "\n")
		} else {
			// Its state from the list; its user and realm from the key
			// read whole (for a moment after another key became current,
			// only its grant).
			k := row.Key()
			cur := &k
			if w.curKey != nil && w.curKey.ID == k.ID {
				cur = w.curKey
			}
			state := keyState(k, w.c.now)
			st := s.OK
			if k.StatusAt(w.c.now) != store.StatusValid {
				st = s.Warn
			}
			name := "Current key"
			if k.Default {
				name = "Default key"
			}
			b.WriteString("  " + s.row(name, 14, s.Value.Render(row.Shown())+"  "+st.Render(state)) + "\n")
			switch {
			case cur.Username != "":
				b.WriteString("  " + s.row("User", 14, show(s.Value, cur.Words().Username)+show(s.Subtle, text.Concat(text.Trusted(" @ "), cur.Words().RealmURL))) + "\n")
			case cur == &k:
				b.WriteString("  " + s.row("Grant", 14, s.Value.Render(viewOf(cur.Grant).title)) + "\n")
			default:
				b.WriteString("  " + s.row("Grant", 14, s.Value.Render(viewOf(cur.Grant).title)+show(s.Subtle, text.Concat(text.Trusted(" @ "), cur.Words().RealmURL))) + "\n")
			}
		}
		b.WriteString("  " + s.row("Keys", 14, s.Value.Render(strconv.Itoa(w.keys.len()))) + "\n")
	}
	b.WriteString("\n")
	for i, it := range w.menu() {
		title := fmt.Sprintf("%-16s", it.title)
		line := "   " + title
		if i == w.cursor {
			line = s.Selected.Render(" › " + title)
			cursorLine = strings.Count(b.String(), "\n")
		}
		b.WriteString("  " + line + s.Subtle.Render("  "+it.hint) + "\n")
	}
	return b.String(), cursorLine
}

func (w *welcome) ShortHelp() []key.Binding {
	k := w.c.keys
	return []key.Binding{k.Enter, k.NewKey, k.Details, k.Keys, k.Inspector, k.Request, k.Help, k.Quit}
}

func (w *welcome) FullHelp() [][]key.Binding {
	k := w.c.keys
	return [][]key.Binding{{k.Up, k.Down, k.Enter}, {k.NewKey, k.Details, k.Keys, k.Inspector, k.Request, k.Activity}}
}
