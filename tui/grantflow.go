package tui

import (
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/store"
)

// The root's side of an interactive grant (device code, browser sign-in):
// the grant runs in a command with its own cancellable context, its prompts
// arrive as grantPromptMsg (grantRun.listen), the sign-in screen shows them,
// and its answer is the create's keyTokensMsg like any other grant's.

// startCreateGrant runs the Get API Key request of a grant that waits for a
// person. No operation timeout applies: the grant is bounded by its code's
// lifetime (device) or its wait (browser), and by esc.
func (m *Model) startCreateGrant(nk store.NewKey) tea.Cmd {
	m.endGrant()
	g, ctx := newGrantRun(m.ctx, m.req.start(slotCreate), opCreate, nk.Label)
	m.grant = g
	nk.Prompt = g.prompter()
	st, seq, finished := m.backend, g.seq, g.finished
	create := func() tea.Msg {
		defer close(finished)
		msg := keyTokensMsg{seq: seq, op: opCreate, label: nk.Label}
		if st == nil {
			msg.err = errNoStore
			return msg
		}
		k, ts, err := st.Create(ctx, nk)
		return withTokens(msg, k, ts, err)
	}
	return tea.Batch(m.startOp(), create, g.listen())
}

// handleGrantPrompt shows what the grant in flight asks of the person, in
// place of the form, and listens for the next prompt.
func (m *Model) handleGrantPrompt(msg grantPromptMsg) tea.Cmd {
	g := m.grant
	if g == nil || msg.seq != g.seq {
		return nil // a cancelled run's
	}
	m.signin.show(g.label, msg.prompt)
	cmds := []tea.Cmd{g.listen()}
	if m.active == screenForm {
		cmds = append(cmds, m.replace(screenSignin))
	}
	return tea.Batch(cmds...)
}

// cancelGrant gives up the grant in flight: its context is cancelled (the
// store keeps nothing), its late answer is dropped, and the form is back
// with every value kept.
func (m *Model) cancelGrant() tea.Cmd {
	if m.grant == nil {
		return m.replace(screenForm)
	}
	m.endGrant()
	m.req.start(slotCreate) // the answer on its way is stale now
	m.form.state = formEditing
	m.form.general = "Cancelled: nothing was stored."
	return tea.Batch(m.form.focusOn(m.form.focus), m.replace(screenForm))
}

// endGrant cancels the grant in flight, if any, and forgets it.
func (m *Model) endGrant() {
	if m.grant != nil {
		m.grant.cancel()
		m.grant = nil
	}
}
