package tui

import (
	"errors"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// handleKeysLoaded applies a fresh key list everywhere it shows.
func (m *Model) handleKeysLoaded(msg keysLoadedMsg) tea.Cmd {
	if !m.req.current(slotKeys, msg.seq) {
		return nil // a newer list is on its way
	}
	m.req.done(slotKeys, msg.seq)
	first := !m.loaded
	m.loaded = true
	m.stamp = msg.stamp
	m.keys = msg.keys
	m.setRenewals(msg.renew)
	if m.cfg.limitHeap != nil && m.keys != nil {
		m.cfg.limitHeap(m.keys.bytes)
	}
	if _, ok := m.keys.find(m.current); !ok {
		m.current = msg.current
	}
	m.newest = msg.picks.newest
	for _, k := range []*store.Key{msg.picks.want, msg.picks.pick} {
		if k != nil && k.Label == m.current {
			m.curKey = k
		}
	}
	if p := msg.picks.detail; p != nil && p.ID == m.details.key.ID {
		m.details.setKey(*p)
	}
	m.setCurrent(m.current)
	m.welcome.setKeys(msg.keys, msg.err)
	m.keyList.setKeys(msg.keys)
	m.request.setKeys(msg.keys)
	if first && msg.err == nil && m.keys.len() == 0 && m.active == screenWelcome {
		return m.openForm()
	}
	return nil
}

// handleStamp reloads what other shipkey processes changed: the keys that
// changed (or the whole key list), and the shown key's tokens when the
// details screen is idle. Nothing is read when the stamp is the one of the
// last load.
func (m *Model) handleStamp(msg stampMsg) tea.Cmd {
	if !m.req.current(slotStamp, msg.seq) {
		return nil
	}
	m.req.done(slotStamp, msg.seq)
	if msg.err != nil || msg.stamp == m.stamp || m.req.pending(slotKeys) {
		return nil
	}
	since := m.stamp
	m.stamp = msg.stamp // one reload per change, even if the load is slow
	load := m.loadChanges(since)
	if m.keys == nil {
		load = m.loadKeys()
	}
	cmds := []tea.Cmd{load}
	if d := m.details; d.key.Label != "" && d.state == detailsIdle && m.active == screenDetails {
		cmds = append(cmds, m.startOp(), m.openCmd(m.req.start(slotOp), d.key.Label))
	}
	return tea.Batch(cmds...)
}

// handleChanges puts the keys that changed into the key list (a copy of
// it: keyIndex.with), or reads the whole list when the store says so.
func (m *Model) handleChanges(msg changesMsg) tea.Cmd {
	if !m.req.current(slotKeys, msg.seq) {
		return nil // a newer list is on its way
	}
	m.req.done(slotKeys, msg.seq)
	if msg.err != nil || msg.ch.All || m.keys == nil {
		return m.loadKeys()
	}
	if !m.applyChangedKeys(msg.ch.Keys) {
		return m.loadKeys()
	}
	m.stamp = msg.ch.Stamp
	return m.recheckAfterLoad()
}

// applyChangedKeys puts keys, read again, into the key list (a copy of it:
// keyIndex.with) and their next renewals into the heap; false when one has
// no row (the list changed otherwise: read it all again).
func (m *Model) applyChangedKeys(keys []store.Key) bool {
	x, rows := m.keys.with(keys)
	if x == nil {
		return false
	}
	old := m.keys
	m.keys = x
	for _, k := range keys {
		if k.Label == m.current {
			m.curKey = &k
		}
		if k.ID == m.details.key.ID {
			m.details.setKey(k)
		}
	}
	m.pushRenewals(old, keys, rows)
	m.welcome.setKeys(x, nil)
	m.keyList.setRows(x, rows)
	m.request.setKeys(x)
	return true
}

// handleKeyTokens applies the answer of create, login, refresh, open and
// inspect; stale answers (an older request, another key) are dropped.
func (m *Model) handleKeyTokens(msg keyTokensMsg) tea.Cmd {
	if msg.err == nil {
		defer m.knowKey(msg.key)
	}
	m.endOp()
	switch msg.op {
	case opCreate:
		return m.handleCreated(msg)
	case opInspect:
		return m.handleInspected(msg)
	}
	return m.handleDetailsTokens(msg) // opOpen, opLogin, opRefresh
}

// handleCreated applies the answer of the form's create: the new key's
// details, or the form again with what failed.
func (m *Model) handleCreated(msg keyTokensMsg) tea.Cmd {
	if !m.req.current(slotCreate, msg.seq) {
		if msg.err == nil && msg.key.Label != "" {
			// A cancelled grant that had already got its token: the
			// key exists after all; say so rather than hide it.
			m.toast, m.toastOK = text.Cleanf("API key %q was created before the cancel took effect.", msg.key.Shown()), true
			return m.loadKeys()
		}
		return nil
	}
	m.endGrant()
	if m.createCancel != nil {
		m.createCancel() // releases the request's context
		m.createCancel = nil
	}
	if msg.err != nil {
		if m.active == screenSignin {
			return tea.Batch(m.form.fail(msg.err), m.replace(screenForm))
		}
		return m.form.fail(msg.err)
	}
	m.form.state = formDone
	m.setCurrent(msg.key.Label)
	m.details.open(msg.key, msg.tokens)
	m.toast, m.toastOK = m.createdToast(msg), true
	return tea.Batch(m.replace(screenDetails), m.loadKeys(), m.checkLive(msg.key.Label))
}

// createdToast says the key was created and, for a grant where a person
// signs in, whose account it now uses (a browser may be signed in to
// another one).
func (m *Model) createdToast(msg keyTokensMsg) text.Clean {
	if viewOf(msg.key.Grant).waits {
		if who := auth.SignedInAs(msg.tokens, m.c.now).Shown(); !who.IsEmpty() {
			return text.Cleanf("API key %q created, signed in as %s.", msg.key.Shown(), who)
		}
	}
	return text.Cleanf("API key %q created.", msg.key.Shown())
}

// handleInspected opens the inspector on the key's token, or says why
// there is none.
func (m *Model) handleInspected(msg keyTokensMsg) tea.Cmd {
	if !m.req.current(slotInspect, msg.seq) {
		return nil
	}
	if msg.err != nil || msg.tokens == nil {
		m.toast, m.toastOK = text.Trusted("No token to inspect: log in first."), false
		if msg.err != nil {
			m.toast = text.Concat(text.Trusted("Cannot read the token: "), errClean(msg.err))
		}
		return nil
	}
	return m.loadInspector("key "+msg.label, keyTokens(msg.key, msg.tokens))
}

// handleDetailsTokens applies the answer of open, login or refresh of the
// details key; a new token is checked at the server.
func (m *Model) handleDetailsTokens(msg keyTokensMsg) tea.Cmd {
	if !m.req.current(slotOp, msg.seq) || msg.label != m.details.key.Label {
		return nil
	}
	var back tea.Cmd
	if g := m.grant; g != nil && g.seq == msg.seq {
		m.endGrant()
		if m.active == screenSignin {
			back = m.replace(screenDetails)
		}
	}
	renewed := m.details.result(msg)
	var queued tea.Cmd
	if a := m.details.takeQueued(); a != nil {
		queued = m.apply(a)
	}
	if !renewed {
		return tea.Batch(back, queued)
	}
	// A new token: ask the server about it, not about the old one.
	return tea.Batch(back, queued, m.loadKeys(), m.checkLive(msg.label))
}

// handleLiveness applies a server check of the details key; the answer of
// an older check, or one about another key, is dropped.
func (m *Model) handleLiveness(msg livenessMsg) tea.Cmd {
	m.endOp()
	if !m.req.current(slotLive, msg.seq) || msg.label != m.details.key.Label {
		return nil
	}
	m.details.liveResult(msg)
	return nil
}

// handleOpDone applies the answer of logout, delete, rename, set default
// and mark used: the screen the operation came from says what it means,
// and the key list is read once.
func (m *Model) handleOpDone(msg opDoneMsg) tea.Cmd {
	if msg.op != opMarkUsed {
		m.endOp()
	}
	switch msg.op {
	case opLogout:
		if m.req.current(slotOp, msg.seq) && msg.label == m.details.key.Label {
			if toast := m.details.loggedOut(msg.end, msg.err); !toast.IsEmpty() {
				m.toast, m.toastOK = toast, true
			}
		}
	case opDelete, opRename, opSetDefault:
		toast, ok := m.keyList.outcome(msg)
		if !ok {
			return nil
		}
		m.toast, m.toastOK = toast, true
		switch {
		case msg.op == opDelete && m.current == msg.label:
			m.setCurrent("")
		case msg.op == opRename && m.current == msg.label:
			m.setCurrent(msg.to)
		case msg.op == opSetDefault:
			m.setCurrent(msg.label)
		}
	case opMarkUsed:
		if msg.err != nil {
			return nil // copying worked; only the Last Used stamp did not
		}
	}
	return m.loadKeys()
}

// handleCopyReady copies a token fetched from the key list.
func (m *Model) handleCopyReady(msg copyReadyMsg) tea.Cmd {
	m.endOp()
	if msg.err != nil || msg.tokens == nil {
		m.toast, m.toastOK = text.Trusted("Nothing to copy: log in first."), false
		if msg.err != nil && !errors.Is(msg.err, store.ErrLoginNeeded) {
			m.toast = text.Concat(text.Trusted("Cannot read the token: "), errClean(msg.err))
		}
		return nil
	}
	return m.copyToken(msg.label, msg.tokens, msg.header)
}

// setCurrent makes label the current key (the one "1" opens and Welcome
// shows): the last opened, created or made default.
func (m *Model) setCurrent(label string) {
	m.current = label
	switch {
	case m.curKey != nil && m.curKey.Label == label:
	case m.details.key.Label == label && label != "" && !m.details.partial:
		k := m.details.key
		m.curKey = &k
	default:
		m.curKey = nil // Welcome shows its row until it is read
	}
	m.welcome.current, m.welcome.curKey = label, m.curKey
}

// knowKey takes a key read whole from the store: the current key's, for
// Welcome.
func (m *Model) knowKey(k store.Key) {
	if k.Label != "" && k.Label == m.current {
		m.curKey = &k
		m.welcome.curKey = m.curKey
	}
}

// handleRequestDone shows the answer of the Request screen's request; the
// answer of a cancelled or older request is dropped.
func (m *Model) handleRequestDone(msg requestDoneMsg) tea.Cmd {
	if !m.req.current(slotRequest, msg.seq) {
		return nil // cancelled: endOp was counted then
	}
	m.endOp()
	m.req.done(slotRequest, msg.seq)
	m.cancelRequest() // releases the request's context
	if msg.err != nil {
		return m.request.failed(requestError(msg.err))
	}
	m.request.answered(msg.answer)
	return nil
}
