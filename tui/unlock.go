package tui

import (
	"errors"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// The app on a store with no key starts without unlocking its secrets
// (Options.Unlock), so that no passphrase is asked before the first frame.
// The first new key needs them: the app asks the store what an unlock
// would ask (Unlocker.UnlockAsks) and, for a passphrase, asks it in its
// own masked field over the form (a new one twice), never on the plain
// terminal; then the request goes on. esc ends the request with the form
// saying nothing was unlocked. The passphrase is never shown, logged or
// put into an error: the field echoes bullets, and what was typed is
// forgotten once the unlock ran.

// Unlocker unlocks the secrets of a store the app opened locked;
// *store.Store is one.
type Unlocker interface {
	// UnlockAsks says what unlocking asks: nothing, the key file's
	// passphrase, or a new one; and the key file (its display form).
	UnlockAsks() (store.UnlockAsk, string, error)
	// UnlockWith unlocks with the passphrase typed ("" when none is asked).
	UnlockWith(passphrase string) error
}

var _ Unlocker = (*store.Store)(nil)

// unlockAskMsg answers what the unlock before act asks.
type unlockAskMsg struct {
	act     actSubmitKey
	ask     store.UnlockAsk
	keyFile string
	err     error
}

// unlockedMsg reports the unlock run before act.
type unlockedMsg struct {
	act actSubmitKey
	err error
}

// unlockThen unlocks the secrets, asking in the app what it needs, then
// applies act.
func (m *Model) unlockThen(act actSubmitKey) tea.Cmd {
	u := m.cfg.unlock
	return tea.Batch(m.startOp(), func() tea.Msg {
		ask, keyFile, err := u.UnlockAsks()
		return unlockAskMsg{act: act, ask: ask, keyFile: keyFile, err: err}
	})
}

// handleUnlockAsk unlocks at once when nothing is to be asked, else opens
// the passphrase field.
func (m *Model) handleUnlockAsk(msg unlockAskMsg) tea.Cmd {
	m.endOp()
	switch {
	case msg.err != nil:
		return m.failCreate(msg.act, msg.err)
	case msg.ask == store.AskNothing:
		return m.unlockWith(msg.act, "")
	}
	m.unlock.open(msg.ask, msg.keyFile, msg.act)
	m.unlock.SetSize(m.width, m.bodyHeight())
	return nil
}

// unlockWith runs the unlock with pass.
func (m *Model) unlockWith(act actSubmitKey, pass string) tea.Cmd {
	u := m.cfg.unlock
	return tea.Batch(m.startOp(), func() tea.Msg { return unlockedMsg{act: act, err: u.UnlockWith(pass)} })
}

// handleUnlocked goes on with the request; a failed unlock leaves the
// passphrase field open with the error under it, or, with no field open,
// ends the request with the unlock's error as its answer.
func (m *Model) handleUnlocked(msg unlockedMsg) tea.Cmd {
	m.endOp()
	if msg.err != nil && m.unlock.state == unlockRunning {
		m.unlock.failed(errText(msg.err))
		return nil
	}
	m.unlock.close()
	if msg.err != nil {
		return m.failCreate(msg.act, msg.err)
	}
	m.unlocked = true
	return m.apply(msg.act)
}

// failCreate ends act's request with err as its answer (the form shows it).
func (m *Model) failCreate(act actSubmitKey, err error) tea.Cmd {
	seq := m.req.start(slotCreate)
	fail := keyTokensMsg{seq: seq, op: opCreate, label: act.sub.nk.Label, err: err}
	return tea.Batch(m.startOp(), func() tea.Msg { return fail })
}

// unlockState is the passphrase field's flow: closed → entering (→
// confirming, for a new passphrase) → running → closed, or entering again
// with the error under the field.
type unlockState int

const (
	unlockClosed unlockState = iota
	unlockEntering
	unlockConfirming
	unlockRunning
)

// unlockPrompt is the passphrase field the form gives way to while it is
// open (Model.screen).
type unlockPrompt struct {
	c             *common
	width, height int
	state         unlockState
	ask           store.UnlockAsk
	keyFile       string // display form
	act           actSubmitKey
	field         textinput.Model
	first         string // the new passphrase typed first, while it is repeated
	errMsg        string
}

func newUnlockPrompt(c *common) *unlockPrompt {
	u := &unlockPrompt{c: c}
	u.field = c.styles.newTextInput("")
	u.field.EchoMode = textinput.EchoPassword
	u.field.EchoCharacter = '•'
	return u
}

func (u *unlockPrompt) restyle() { u.field.SetStyles(u.c.styles.TextInput) }

// isOpen reports whether the field is shown (over the form).
func (u *unlockPrompt) isOpen() bool { return u.state != unlockClosed }

func (u *unlockPrompt) open(ask store.UnlockAsk, keyFile string, act actSubmitKey) {
	u.ask, u.keyFile, u.act = ask, text.Safe(keyFile), act
	u.state, u.errMsg, u.first = unlockEntering, "", ""
	u.field.SetValue("")
	u.field.Focus()
}

// close forgets what was typed.
func (u *unlockPrompt) close() {
	u.state, u.first, u.errMsg = unlockClosed, "", ""
	u.field.SetValue("")
	u.field.Blur()
}

// failed opens the field again with why the unlock failed under it.
func (u *unlockPrompt) failed(why string) {
	u.state, u.first, u.errMsg = unlockEntering, "", why
	u.field.SetValue("")
	u.field.Focus()
}

// actUnlock asks the root to unlock with what was typed.
type actUnlock struct {
	act  actSubmitKey
	pass string
}

// actUnlockCancelled ends the request: nothing was unlocked.
type actUnlockCancelled struct {
	act actSubmitKey
	err error
}

func (actUnlock) isAction()          {}
func (actUnlockCancelled) isAction() {}

func (u *unlockPrompt) Update(msg tea.Msg) (action, tea.Cmd) {
	if p, ok := msg.(tea.PasteMsg); ok && u.state != unlockRunning {
		// A paste is taken as the terminal prompt takes it: its first
		// line. The field made a line break a space, so a copied line's
		// newline left "pass " here and "pass" at every later prompt.
		line, _, _ := strings.Cut(p.Content, "\n")
		msg = tea.PasteMsg{Content: strings.TrimSuffix(line, "\r")}
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok || u.state == unlockRunning {
		if u.state == unlockRunning {
			return nil, nil // the unlock runs: keys wait
		}
		var cmd tea.Cmd
		u.field, cmd = u.field.Update(msg)
		return nil, cmd
	}
	km := u.c.keys
	switch {
	case key.Matches(k, km.Back):
		act, why := u.act, "the secrets file stays locked: no passphrase was given"
		if u.ask == store.AskNewPassphrase {
			why = "no secrets file was made: no passphrase was given"
		}
		u.close()
		return actUnlockCancelled{act: act, err: errors.New(why)}, nil
	case key.Matches(k, km.Enter):
		p := u.field.Value()
		u.field.SetValue("")
		switch {
		case p == "":
			u.errMsg = "the passphrase is empty: type one (esc cancels)"
			if u.state == unlockConfirming {
				u.errMsg = "the passphrase is empty: type the new passphrase again"
			}
			u.state, u.first = unlockEntering, ""
		case u.ask == store.AskNewPassphrase && u.state == unlockEntering:
			u.first, u.state, u.errMsg = p, unlockConfirming, ""
		case u.state == unlockConfirming && p != u.first:
			u.state, u.first = unlockEntering, ""
			u.errMsg = "the passphrases do not match: type the new passphrase again"
		default:
			u.state, u.first, u.errMsg = unlockRunning, "", ""
			return actUnlock{act: u.act, pass: p}, nil
		}
		return nil, nil
	}
	var cmd tea.Cmd
	u.field, cmd = u.field.Update(msg)
	return nil, cmd
}

func (u *unlockPrompt) View() string {
	s := u.c.styles
	const nameW = 20
	var b strings.Builder
	title, name := "The secrets file is locked", "Passphrase"
	if u.ask == store.AskNewPassphrase {
		title, name = "A new passphrase for the secrets file", "New passphrase"
	}
	if u.state == unlockConfirming {
		name = "Repeat passphrase"
	}
	b.WriteString("  " + s.Section.Render(title) + "\n")
	b.WriteString("  " + s.row(name, nameW, u.field.View()) + "\n")
	switch {
	case u.state == unlockRunning:
		b.WriteString("  " + s.Subtle.Render("unlocking…") + "\n")
	case u.errMsg != "":
		b.WriteString(indentWrapped("✗ "+u.errMsg, 2, u.width, s.Error.Render))
	}
	b.WriteString("\n")
	why := "It unlocks the secrets file " + u.keyFile + ", which keeps your API keys' secrets."
	if u.ask == store.AskNewPassphrase {
		// The warning first: at 40×10 the end of the text is cut.
		why = "A lost passphrase cannot be recovered. The secrets of your API keys are kept encrypted with it in " + u.keyFile +
			"; shipkey asks it again when the unlock times out."
	}
	b.WriteString(indentWrapped(why, 2, u.width, s.Subtle.Render))
	return fitBlock(b.String(), u.width, u.height)
}

func (u *unlockPrompt) SetSize(width, height int) {
	u.width, u.height = width, height
	u.field.SetWidth(min(40, max(8, width-24)))
}

func (u *unlockPrompt) ShortHelp() []key.Binding {
	k := u.c.keys
	enter := key.NewBinding(key.WithKeys(k.Enter.Keys()...), key.WithHelp(k.Enter.Help().Key, "unlock"))
	if u.ask == store.AskNewPassphrase && u.state == unlockEntering {
		enter.SetHelp(k.Enter.Help().Key, "next, then type it again")
	}
	cancel := key.NewBinding(key.WithKeys(k.Back.Keys()...), key.WithHelp(k.Back.Help().Key, "cancel"))
	return []key.Binding{enter, cancel}
}

func (u *unlockPrompt) FullHelp() [][]key.Binding { return [][]key.Binding{u.ShortHelp()} }

// Capturing: every key is the passphrase's, but enter and esc.
func (u *unlockPrompt) Capturing() bool { return true }
