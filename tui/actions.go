package tui

import (
	"context"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// apply turns a screen's intent into state changes and commands.
func (m *Model) apply(a action) tea.Cmd {
	switch a := a.(type) {
	case nil:
		return nil
	case actBack:
		return m.back()
	case actQuit:
		return m.quit()
	case actToggleHelp:
		if m.showHelp {
			m.showHelp = false
		} else {
			m.openHelp()
		}
		return nil
	case actOpenForm:
		return m.openForm()
	case actOpenKeys:
		return m.goTo(screenKeys)
	case actOpenRequest:
		return m.openRequest()
	case actOpenDetails:
		return m.openDetails(a.label)
	case actSubmitKey:
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
	case actUnlock:
		return m.unlockWith(a.act, a.pass)
	case actUnlockCancelled:
		return m.failCreate(a.act, a.err)
	case actRegistered:
		if m.grant != nil && m.form.state == formRegistering {
			m.grant.registered()
			m.form.state = formSubmitting
		}
		return nil
	case actCancelGrant:
		return m.cancelGrant()
	case actOpenBrowser:
		return m.openBrowserCmd(m.signin.prompt, false)
	case actCopyText:
		return m.copyText(a.text, a.what, tmuxBufSignin)
	case actRefresh:
		return tea.Batch(m.startOp(), m.refreshCmd(m.req.start(slotOp), a.label, a.auto))
	case actLogin:
		if r, ok := m.keys.find(a.label); ok && viewOf(r.Grant()).waits {
			return m.startLoginGrant(a.label)
		}
		return tea.Batch(m.startOp(), m.loginCmd(m.req.start(slotOp), a.label, a.password))
	case actLogout:
		return tea.Batch(m.startOp(), m.logoutCmd(m.req.start(slotOp), a.label))
	case actReveal:
		return m.reveal(a)
	case actCopy:
		if a.tokens != nil {
			return m.copyToken(a.label, a.tokens, a.header)
		}
		return tea.Batch(m.startOp(), m.fetchForCopyCmd(m.req.next(), a.label, a.header))
	case actDelete:
		return tea.Batch(m.startOp(), m.removeCmd(m.req.next(), a.label))
	case actRename:
		return tea.Batch(m.startOp(), m.simpleCmd(m.req.next(), opRename, a.label, a.newLabel, func(b Backend) error { return b.Rename(a.label, a.newLabel) }))
	case actSetDefault:
		return tea.Batch(m.startOp(), m.simpleCmd(m.req.next(), opSetDefault, a.label, "", func(b Backend) error { return b.SetDefault(a.label) }))
	case actCheckLive:
		return m.checkLive(a.label)
	case actInspectKey:
		return m.inspectKey(a.label)
	case actInspectPaste:
		return tea.Batch(m.goTo(screenInspector), m.inspector.startPaste())
	case actVerifyJWKS:
		return m.verifyInspected()
	case actInspectToken:
		return m.loadInspector(pastedSource, []token{{title: "Pasted token", raw: a.raw}})
	case actSendRequest:
		m.cancelRequest()
		ctx, cancel := context.WithTimeout(m.ctx, opTimeout)
		m.requestCancel = cancel // esc cancels it; the values stay
		m.request.sending(a.call)
		label, typed := a.call.label, a.typed
		record := m.requestsCmd(actRequests{label: label, change: func(h *store.RequestHistory) (*store.KeyRequests, error) {
			return h.Record(label, typed)
		}})
		return tea.Batch(m.startOp(), m.sendCmd(ctx, m.req.start(slotRequest), a.call), record)
	case actRequests:
		return m.requestsCmd(a)
	case actCopyCurl:
		return m.copyText(a.line, a.what, tmuxBufCurl)
	case actCancelRequest:
		m.cancelRequest()
		m.req.start(slotRequest) // the late answer, if any, is stale
		m.endOp()
		return m.request.failed("Request cancelled; ctrl+s sends it again.")
	}
	return nil
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
