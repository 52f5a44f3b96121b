package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
)

// handleKey routes a key press: ctrl+c always quits; the help overlay and
// screens whose text field has focus come first; then the global keys; then
// the active screen.
func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	m.toast, m.notice = text.Clean{}, text.Clean{}
	switch {
	case key.Matches(k, m.c.keys.ForceQuit):
		return m.quit()
	case m.showHelp:
		return m.helpKey(k)
	case m.screen().Capturing():
		return m.capturedKey(k)
	}
	if cmd, done := m.globalKey(k); done {
		return cmd
	}
	return m.forward(k)
}

// helpKey handles a key while the help overlay shows: it closes, quits or
// scrolls.
func (m *Model) helpKey(k tea.KeyPressMsg) tea.Cmd {
	km := m.c.keys
	switch {
	case key.Matches(k, km.Help), key.Matches(k, km.HelpTyping), key.Matches(k, km.Back):
		m.showHelp = false
	case key.Matches(k, km.Quit):
		return m.quit()
	default:
		m.scrollHelp(k)
	}
	return nil
}

// capturedKey handles a key for a screen whose field has focus: it goes to
// the screen, but for the key that opens the help.
func (m *Model) capturedKey(k tea.KeyPressMsg) tea.Cmd {
	km := m.c.keys
	// f1 opens the help from a text field; ? only where the focused
	// field is not text (the form's grant, a toggle): in a text field,
	// a hidden Client Secret included, ? is typed, as the footer's
	// "f1 help" tells.
	if key.Matches(k, km.HelpTyping) || (key.Matches(k, km.Help) && !m.typing()) {
		m.openHelp()
		return nil
	}
	return m.forward(k)
}

// globalKey handles the keys every screen shares: quit, help, and those
// that open another screen (not on a modal screen, which waits for a
// person). done is false for any other key: it goes to the screen.
func (m *Model) globalKey(k tea.KeyPressMsg) (cmd tea.Cmd, done bool) {
	km := m.c.keys
	switch {
	case key.Matches(k, km.Quit):
		return m.quit(), true
	case key.Matches(k, km.Help), key.Matches(k, km.HelpTyping):
		m.openHelp()
		return nil, true
	case m.active.modal():
		// A screen waiting for a person: the keys that open other
		// screens stand aside.
		return nil, false
	case key.Matches(k, km.Details):
		return m.openCurrent(), true
	case key.Matches(k, km.Keys):
		return m.goTo(screenKeys), true
	case key.Matches(k, km.Inspector):
		return m.apply(m.inspectCurrent()), true
	case key.Matches(k, km.Request):
		return m.openRequest(), true
	case key.Matches(k, km.Activity):
		return m.openActivity(), true
	case key.Matches(k, km.NewKey) && m.active != screenForm:
		return m.openForm(), true
	}
	return nil, false
}

// typing reports whether the active screen's focus is a text field (keys
// are text): a capturing screen is, unless it says otherwise (Typing).
func (m *Model) typing() bool {
	if t, ok := m.screen().(interface{ Typing() bool }); ok {
		return t.Typing()
	}
	return m.screen().Capturing()
}

func (m *Model) quit() tea.Cmd {
	m.endGrant() // stops its wait; nothing is stored
	m.cancelRequest()
	m.quitting = true
	return tea.Quit
}

// goTo shows screen id, remembering where to go back to.
func (m *Model) goTo(id screenID) tea.Cmd {
	if id != m.active {
		m.history = append(m.history, m.active)
		if len(m.history) > 32 {
			m.history = m.history[1:]
		}
		m.active = id
	}
	if id == screenKeys {
		// The key just viewed is the one selected.
		viewed := m.current
		if m.details.key.Label != "" {
			viewed = m.details.key.Label
		}
		m.keyList.selectLabel(viewed)
	}
	return m.ensureTick()
}

// back returns to the previous screen (the welcome screen at the bottom).
func (m *Model) back() tea.Cmd {
	prev := screenWelcome
	for len(m.history) > 0 {
		prev = m.history[len(m.history)-1]
		m.history = m.history[:len(m.history)-1]
		if prev != m.active {
			break
		}
	}
	m.active = prev
	return m.ensureTick()
}

// replace shows id instead of the active screen (a finished form).
func (m *Model) replace(id screenID) tea.Cmd {
	m.active = id
	return m.ensureTick()
}

// openForm shows Get API Key, prefilled from Options.Prefill, else from the
// most recent key (never its secrets).
func (m *Model) openForm() tea.Cmd {
	p := m.cfg.prefill
	if last := m.newest; p.empty() && last != nil {
		p = Prefill{AuthURL: last.Connection.AuthURL, Realm: last.Connection.Realm, ClientID: last.Connection.ClientID, Username: last.Username,
			Grant: last.Grant, TokenURL: last.Connection.TokenURL, Issuer: last.Connection.Issuer, ClientAuth: last.Connection.AuthMethod(),
			DPoP: last.Connection.DPoP, NoPAR: last.Connection.NoPAR, CallbackPort: last.CallbackPort}
		for i, sc := range last.Connection.Scopes {
			if i > 0 {
				p.Scope += " "
			}
			p.Scope += sc
		}
	}
	taken := func(label string) bool { _, ok := m.keys.find(label); return ok } // the list as it is then
	p.Label = freeLabel(p.Label, taken)
	return tea.Batch(m.form.reset(p, taken), m.goTo(screenForm))
}

// freeLabel returns label, or when a key has it already, the first of
// label-2, label-3, … that none has: a prefilled form must not propose a
// label the validation would refuse.
func freeLabel(label string, taken func(string) bool) string {
	if label == "" || !taken(label) {
		return label
	}
	for n := 2; ; n++ {
		if c := fmt.Sprintf("%s-%d", label, n); !taken(c) {
			return c
		}
	}
}

// openCurrent shows the token details of the current key; without one, the
// key list or, with no keys at all, Get API Key.
func (m *Model) openCurrent() tea.Cmd {
	switch {
	case m.current != "":
		return m.openDetails(m.current)
	case m.keys.len() > 0:
		m.toast, m.toastOK = text.Trusted("No default key: pick one (enter opens, * makes it the default)."), false
		return m.goTo(screenKeys)
	default:
		return m.openForm()
	}
}

// inspectCurrent is "3": the current key's tokens, else the paste field.
func (m *Model) inspectCurrent() action {
	if m.current != "" {
		return actInspectKey{label: m.current}
	}
	return actInspectPaste{}
}

// openRequest is "4": the Request screen, for the key in sight (the one
// selected in API keys, the one whose details are shown), else the
// current key.
func (m *Model) openRequest() tea.Cmd {
	label := m.current
	switch {
	case m.active == screenKeys && m.keyList.selected() != nil:
		label = m.keyList.selected().label
	case m.active == screenDetails && m.details.key.Label != "":
		label = m.details.key.Label
	}
	return tea.Batch(m.goTo(screenRequest), m.request.open(label), m.loadRequestsCmd())
}
