package tui

import (
	"io"

	tea "charm.land/bubbletea/v2"
)

// The app on a store with no key starts without unlocking its secrets
// (Options.Unlock), so that no passphrase is asked before the first frame.
// The first new key needs them: the terminal is handed back (tea.Exec) for
// the passphrase prompt, then the request goes on, or fails on the form
// with what the unlock said.

// unlockedMsg reports the unlock run before act.
type unlockedMsg struct {
	act actSubmitKey
	err error
}

// unlockExec runs the unlock while Bubble Tea has released the terminal.
type unlockExec struct{ run func() error }

func (u unlockExec) Run() error        { return u.run() }
func (unlockExec) SetStdin(io.Reader)  {}
func (unlockExec) SetStdout(io.Writer) {}
func (unlockExec) SetStderr(io.Writer) {}

// unlockThen unlocks the secrets with the terminal released, then applies
// act.
func (m *Model) unlockThen(act actSubmitKey) tea.Cmd {
	exec := m.cfg.exec
	if exec == nil {
		exec = tea.Exec
	}
	return exec(unlockExec{run: m.cfg.unlock}, func(err error) tea.Msg { return unlockedMsg{act: act, err: err} })
}

// handleUnlocked goes on with the request, or ends it with the unlock's
// error as its answer.
func (m *Model) handleUnlocked(msg unlockedMsg) tea.Cmd {
	if msg.err == nil {
		m.unlocked = true
		return m.apply(msg.act)
	}
	seq := m.req.start(slotCreate)
	fail := keyTokensMsg{seq: seq, op: opCreate, label: msg.act.sub.nk.Label, err: msg.err}
	return tea.Batch(m.startOp(), func() tea.Msg { return fail })
}
