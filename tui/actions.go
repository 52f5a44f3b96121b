package tui

import (
	"context"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// apply turns a screen's intent into state changes and commands: moving
// between screens, creating a key, a key's operations, the inspector's and
// the Request screen's.
func (m *Model) apply(a action) tea.Cmd {
	cmd, _ := firstTaker(a, m.applyNavigation, m.applyCreate, m.applyKeyOp, m.applyInspect, m.applyRequest)
	return cmd
}

// applyNavigation moves between screens; ok is false for other actions.
func (m *Model) applyNavigation(a action) (cmd tea.Cmd, ok bool) {
	switch a := a.(type) {
	case nil:
		return nil, true
	case actBack:
		return m.back(), true
	case actQuit:
		return m.quit(), true
	case actToggleHelp:
		m.toggleHelp()
		return nil, true
	case actOpenForm:
		return m.openForm(), true
	case actOpenKeys:
		return m.goTo(screenKeys), true
	case actOpenRequest:
		return m.openRequest(), true
	case actOpenDetails:
		return m.openDetails(a.label), true
	}
	return nil, false
}

// toggleHelp closes the full help, or opens it.
func (m *Model) toggleHelp() {
	if m.showHelp {
		m.showHelp = false
	} else {
		m.openHelp()
	}
}

// applyCreate runs the new-key form's actions: submitting (after the
// unlock), the grant's steps; ok is false for other actions.
func (m *Model) applyCreate(a action) (cmd tea.Cmd, ok bool) {
	switch a := a.(type) {
	case actSubmitKey:
		return m.submitKey(a), true
	case actUnlock:
		return m.unlockWith(a.act, a.pass), true
	case actUnlockCancelled:
		return m.failCreate(a.act, a.err), true
	case actRegistered:
		if m.grant != nil && m.form.state == formRegistering {
			m.grant.registered()
			m.form.state = formSubmitting
		}
		return nil, true
	case actCancelGrant:
		return m.cancelGrant(), true
	case actOpenBrowser:
		return m.openBrowserCmd(m.signin.prompt, false), true
	case actCopyText:
		return m.copyText(a.text, a.what, tmuxBufSignin), true
	}
	return nil, false
}

// submitKey creates the form's key: after the unlock; through the grant's
// prompts when a person takes part.
func (m *Model) submitKey(a actSubmitKey) tea.Cmd {
	if m.cfg.unlock != nil && !m.unlocked {
		return m.unlockThen(a)
	}
	if viewOf(a.sub.nk.Grant).waits || a.sub.nk.GenerateClientKey {
		// A person takes part: the grant's prompts, or registering
		// the generated client key before the grant runs.
		return m.startCreateGrant(a.sub)
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.createCancel = cancel // esc on the form cancels a request that hangs
	return tea.Batch(m.startOp(), m.createCmd(ctx, m.req.start(slotCreate), a.sub))
}

// applyKeyOp runs an operation on a key; ok is false for other actions.
func (m *Model) applyKeyOp(a action) (cmd tea.Cmd, ok bool) {
	switch a := a.(type) {
	case actRefresh:
		return tea.Batch(m.startOp(), m.refreshCmd(m.req.start(slotOp), a.label, a.auto)), true
	case actLogin:
		return m.login(a), true
	case actLogout:
		return tea.Batch(m.startOp(), m.logoutCmd(m.req.start(slotOp), a.label)), true
	case actReveal:
		return m.reveal(a), true
	case actCopy:
		if a.tokens != nil {
			return m.copyToken(a.label, a.tokens, a.header), true
		}
		return tea.Batch(m.startOp(), m.fetchForCopyCmd(m.req.next(), a.label, a.header)), true
	case actDelete:
		return tea.Batch(m.startOp(), m.removeCmd(m.req.next(), a.label)), true
	case actRename:
		return tea.Batch(m.startOp(), m.simpleCmd(m.req.next(), opRename, a.label, a.newLabel, func(b Backend) error { return b.Rename(a.label, a.newLabel) })), true
	case actSetDefault:
		return tea.Batch(m.startOp(), m.simpleCmd(m.req.next(), opSetDefault, a.label, "", func(b Backend) error { return b.SetDefault(a.label) })), true
	case actCheckLive:
		return m.checkLive(a.label), true
	}
	return nil, false
}

// login logs a key in: through the grant's prompts when a person takes
// part.
func (m *Model) login(a actLogin) tea.Cmd {
	if r, ok := m.keys.find(a.label); ok && viewOf(r.Grant()).waits {
		return m.startLoginGrant(a.label)
	}
	return tea.Batch(m.startOp(), m.loginCmd(m.req.start(slotOp), a.label, a.password))
}

// applyInspect runs the inspector's actions; ok is false for others.
func (m *Model) applyInspect(a action) (cmd tea.Cmd, ok bool) {
	switch a := a.(type) {
	case actInspectKey:
		return m.inspectKey(a.label), true
	case actInspectPaste:
		return tea.Batch(m.goTo(screenInspector), m.inspector.startPaste()), true
	case actVerifyJWKS:
		return m.verifyInspected(), true
	case actInspectToken:
		return m.loadInspector(pastedSource, []token{{title: "Pasted token", raw: a.raw}}), true
	}
	return nil, false
}

// applyRequest runs the Request screen's actions; ok is false for others.
func (m *Model) applyRequest(a action) (cmd tea.Cmd, ok bool) {
	switch a := a.(type) {
	case actSendRequest:
		return m.sendRequest(a), true
	case actRequests:
		return m.requestsCmd(a), true
	case actCopyCurl:
		return m.copyText(a.line, a.what, tmuxBufCurl), true
	case actCancelRequest:
		m.cancelRequest()
		m.req.start(slotRequest) // the late answer, if any, is stale
		m.endOp()
		return m.request.failed("Request cancelled; ctrl+s sends it again."), true
	}
	return nil, false
}

// sendRequest sends the Request screen's request (a new one cancels the
// one in flight) and records it in the key's history.
func (m *Model) sendRequest(a actSendRequest) tea.Cmd {
	m.cancelRequest()
	ctx, cancel := context.WithTimeout(m.ctx, opTimeout)
	m.requestCancel = cancel // esc cancels it; the values stay
	m.request.sending(a.call)
	label, typed := a.call.label, a.typed
	record := m.requestsCmd(actRequests{label: label, change: func(h *store.RequestHistory) (*store.KeyRequests, error) {
		return h.Record(label, typed)
	}})
	return tea.Batch(m.startOp(), m.sendCmd(ctx, m.req.start(slotRequest), a.call), record)
}

// cancelRequest cancels the Request screen's request in flight, if any.
func (m *Model) cancelRequest() {
	if m.requestCancel != nil {
		m.requestCancel()
		m.requestCancel = nil
	}
}

// openDetails shows a key's token details at once, from its metadata when
// the app has the key whole (the current key, the key last shown), else
// "reading the key…" under its label, and reads the key and its token set.
func (m *Model) openDetails(label string) tea.Cmd {
	r, ok := m.keys.find(label)
	if !ok {
		m.toast, m.toastOK = text.Cleanf("No key labelled %q.", text.Sanitize(label)), false
		return nil
	}
	m.setCurrent(label)
	if m.details.key.ID == r.id && m.details.busy() {
		return m.goTo(screenDetails) // its operation's answer is on the way
	}
	if m.details.key.ID != r.id || m.details.tokens == nil {
		switch {
		case m.curKey != nil && m.curKey.ID == r.id:
			m.details.open(*m.curKey, nil)
		case m.details.key.ID == r.id && !m.details.partial:
			m.details.open(m.details.key, nil)
		default:
			m.details.open(r.Key(), nil)
			m.details.partial = true
		}
		m.details.reading = true
	}
	return tea.Batch(m.goTo(screenDetails), m.startOp(), m.openCmd(m.req.start(slotOp), label), m.checkLive(label))
}

// checkLive asks the server whether it still accepts the details key's
// access token; the answer of an earlier check is dropped.
func (m *Model) checkLive(label string) tea.Cmd {
	m.details.startLiveCheck()
	return tea.Batch(m.startOp(), m.livenessCmd(m.req.start(slotLive), label))
}

// inspectKey opens the inspector on a key's access and refresh tokens.
func (m *Model) inspectKey(label string) tea.Cmd {
	if m.details.key.Label == label && m.details.tokens != nil {
		return m.loadInspector("key "+label, keyTokens(m.details.key, m.details.tokens))
	}
	return tea.Batch(m.startOp(), m.currentCmd(m.req.start(slotInspect), opInspect, label))
}

// keyTokens are the tokens of key k to inspect; its access token is
// DPoP-bound when the key uses DPoP (or the server said token_type DPoP).
func keyTokens(k store.Key, t *auth.TokenSet) []token {
	dpop := k.Connection.DPoP || strings.EqualFold(t.TokenType, auth.DPoPTokenType)
	return []token{{title: "Access token", raw: t.AccessToken, dpop: dpop}, {title: "Refresh token", raw: t.RefreshToken}, {title: "ID token", raw: t.IDToken}}
}

// loadInspector decodes toks into the inspector and starts the signature
// checks.
func (m *Model) loadInspector(source string, toks []token) tea.Cmd {
	seq := m.req.start(slotInspect)
	verify := m.inspector.load(source, toks, m.c.now, seq)
	cmds := []tea.Cmd{m.goTo(screenInspector)}
	for _, i := range verify {
		cmds = append(cmds, m.startOp(), m.verifyCmd(seq, i, m.inspector.tokens[i].raw, m.inspector.jwks))
	}
	return tea.Batch(cmds...)
}

// verifyInspected checks the inspected JWTs' signatures again (a JWKS URL
// was given or cleared); the answers of earlier checks are stale.
func (m *Model) verifyInspected() tea.Cmd {
	seq := m.req.start(slotInspect)
	var cmds []tea.Cmd
	for _, i := range m.inspector.reverify(seq) {
		cmds = append(cmds, m.startOp(), m.verifyCmd(seq, i, m.inspector.tokens[i].raw, m.inspector.jwks))
	}
	return tea.Batch(cmds...)
}

// startOp counts an operation in flight and starts the spinner if it is
// not running.
func (m *Model) startOp() tea.Cmd {
	m.req.begin()
	return m.ensureSpinner()
}

// spinnerShown reports whether the spinner is on screen: while something is
// in flight, but not on the Sign in screen, which waits for a person for
// minutes with its countdown moving (a spinner there would draw 12 frames a
// second for nothing).
func (m *Model) spinnerShown() bool { return m.req.inflight > 0 && m.active != screenSignin }

// ensureSpinner starts the spinner when it is shown and not running.
func (m *Model) ensureSpinner() tea.Cmd {
	if m.spinning || !m.spinnerShown() {
		return nil
	}
	m.spinning = true
	return m.spinner.Tick
}

// endOp counts an operation done; the spinner stops at its next frame.
func (m *Model) endOp() { m.req.end() }

func (m *Model) handleSpinner(msg tea.Msg) tea.Cmd {
	if !m.spinnerShown() {
		m.spinning = false
		return nil
	}
	var cmd tea.Cmd
	m.spinner, cmd = m.spinner.Update(msg)
	return cmd
}
