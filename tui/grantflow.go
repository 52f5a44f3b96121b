package tui

import (
	"errors"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/browser"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// The root's side of an interactive grant (device code, browser sign-in):
// the grant runs in a command with its own cancellable context, its prompts
// arrive as grantPromptMsg (grantRun.listen), the sign-in screen shows them,
// and its answer is the create's keyTokensMsg like any other grant's.

// startCreateGrant runs the Get API Key request of a grant that waits for a
// person. No operation timeout applies: the grant is bounded by its code's
// lifetime (device) or its wait (browser), and by esc.
func (m *Model) startCreateGrant(sub submission) tea.Cmd {
	m.endGrant()
	g, ctx := newGrantRun(m.ctx, m.req.start(slotCreate), opCreate, sub.nk.Label)
	m.grant = g
	prompt, register := g.prompter(), g.registrar(ctx)
	st, seq, finished := m.backend, g.seq, g.finished
	create := func() tea.Msg {
		defer close(finished)
		msg := keyTokensMsg{seq: seq, op: opCreate, label: sub.nk.Label}
		if st == nil {
			msg.err = errNoStore
			return msg
		}
		nk, err := sub.load()
		if err != nil {
			msg.err = err
			return msg
		}
		nk.Prompt = prompt
		if nk.GenerateClientKey {
			nk.OnClientKey = register
		}
		k, ts, err := st.Create(ctx, nk)
		return withTokens(msg, k, ts, err)
	}
	return tea.Batch(m.startOp(), create, g.listen())
}

// startLoginGrant logs the details key in again by its interactive grant;
// the sign-in screen shows on its first prompt and gives way to the token
// details when it ends.
func (m *Model) startLoginGrant(label string) tea.Cmd {
	m.endGrant()
	g, ctx := newGrantRun(m.ctx, m.req.start(slotOp), opLogin, label)
	m.grant = g
	opts := store.LoginOptions{Prompt: g.prompter()}
	st, seq, finished := m.backend, g.seq, g.finished
	login := func() tea.Msg {
		defer close(finished)
		k, ts, err := st.Login(ctx, label, opts)
		return withTokens(keyTokensMsg{seq: seq, op: opLogin, label: label}, k, ts, err)
	}
	return tea.Batch(m.startOp(), login, g.listen())
}

// handleClientKey shows the generated client key's public key set on the
// form, to be registered with the realm before the grant goes on (enter),
// and listens for the grant's next prompt.
func (m *Model) handleClientKey(msg clientKeyMsg) tea.Cmd {
	g := m.grant
	if g == nil || msg.seq != g.seq {
		return nil // a cancelled run's
	}
	m.form.register(msg.jwks)
	return g.listen()
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
	if !g.prompted {
		// As the CLI does: a device code's complete URL only by $BROWSER
		// (the person may approve elsewhere), a browser sign-in by
		// $BROWSER or the desktop's opener. A failure is never fatal.
		g.prompted = true
		cmds = append(cmds, m.openBrowserCmd(msg.prompt, true))
	}
	if m.active == g.from() {
		cmds = append(cmds, m.replace(screenSignin))
	}
	return tea.Batch(cmds...)
}

// from is the screen the run started on, which the sign-in screen stands
// in for while it waits: the form (create) or the token details (login).
func (g *grantRun) from() screenID {
	if g.op == opLogin {
		return screenDetails
	}
	return screenForm
}

// openBrowserCmd opens the prompt's URL in a browser; auto: on the grant's
// first prompt (a missing browser is then said by nobody).
func (m *Model) openBrowserCmd(p auth.Prompt, auto bool) tea.Cmd {
	open, url, envOnly := m.cfg.openURL, p.BrowserURL(), p.UserCode != ""
	if url == "" {
		return nil
	}
	return func() tea.Msg { return browserMsg{auto: auto, err: open(url, envOnly)} }
}

// handleBrowser says how opening the browser went.
func (m *Model) handleBrowser(msg browserMsg) {
	switch {
	case msg.err == nil:
		m.toast, m.toastOK = text.Trusted("Opened the sign-in URL in the browser."), true
	case msg.auto && errors.Is(msg.err, browser.ErrNoBrowser):
		// Nothing to open with: the screen shows the URL and the code.
	case errors.Is(msg.err, browser.ErrNoBrowser):
		m.toast, m.toastOK = text.Trusted("No browser to open (set $BROWSER); copy the URL instead."), false
	default:
		m.toast, m.toastOK = text.Cleanf("Could not open a browser: %v", msg.err), false
	}
}

// cancelGrant gives up the grant in flight: its context is cancelled (the
// store keeps nothing), its late answer is dropped, and the form is back
// with every value kept.
func (m *Model) cancelGrant() tea.Cmd {
	g := m.grant
	if g == nil && m.createCancel != nil && m.form.state == formSubmitting {
		// A token request of the form (no person to wait for) that hangs:
		// cancelled, its answer dropped, the values kept.
		m.createCancel()
		m.createCancel = nil
		m.req.start(slotCreate)
		m.form.state = formEditing
		return m.form.sayGeneral("Cancelled: nothing was stored.")
	}
	if g == nil {
		return m.back()
	}
	m.endGrant()
	if g.op == opLogin {
		m.req.start(slotOp) // the answer on its way is stale now
		m.details.state, m.details.errMsg = detailsIdle, "log in cancelled: nothing changed"
		return m.replace(screenDetails)
	}
	m.req.start(slotCreate)
	m.form.state = formEditing
	return tea.Batch(m.form.sayGeneral("Cancelled: nothing was stored."), m.replace(screenForm))
}

// endGrant cancels the grant in flight, if any, and forgets it.
func (m *Model) endGrant() {
	if m.grant != nil {
		m.grant.cancel()
		m.grant = nil
	}
}
