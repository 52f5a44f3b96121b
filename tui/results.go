package tui

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// handleKeysLoaded applies a fresh key list everywhere it shows.
func (m *Model) handleKeysLoaded(msg keysLoadedMsg) tea.Cmd {
	if msg.seq != m.loadSeq {
		return nil // a newer list is on its way
	}
	first := !m.loaded
	m.loaded = true
	m.keys = msg.keys
	if _, ok := m.findKey(m.current); !ok {
		m.current = msg.current
	}
	m.welcome.setKeys(msg.keys, m.current, msg.err)
	m.keyList.setKeys(msg.keys)
	for _, k := range msg.keys {
		if k.ID == m.details.key.ID {
			m.details.key = k
		}
	}
	if first && msg.err == nil && len(msg.keys) == 0 && m.active == screenWelcome {
		return m.openForm()
	}
	return nil
}

// handleKeyTokens applies the answer of create, login, refresh, open and
// inspect; stale answers (an older request, another key) are dropped.
func (m *Model) handleKeyTokens(msg keyTokensMsg) tea.Cmd {
	m.endOp()
	switch msg.op {
	case "create":
		if msg.seq != m.createSeq {
			return nil
		}
		if msg.err != nil {
			return m.form.fail(msg.err)
		}
		m.form.state = formDone
		m.current = msg.key.Label
		m.keys = append(m.keys, msg.key)
		m.details.open(msg.key, msg.tokens)
		m.toast, m.toastOK = fmt.Sprintf("API key %q created.", text.Safe(msg.key.Label)), true
		return tea.Batch(m.replace(screenDetails), m.loadKeys(), m.checkLive(msg.key.Label))
	case "inspect":
		if msg.seq != m.inspSeq {
			return nil
		}
		if msg.err != nil || msg.tokens == nil {
			m.toast, m.toastOK = "No token to inspect: log in first.", false
			if msg.err != nil {
				m.toast = "Cannot read the token: " + text.Safe(msg.err.Error())
			}
			return nil
		}
		return m.loadInspector("key "+msg.label, keyTokens(msg.tokens))
	}
	if msg.seq != m.opSeq || msg.label != m.details.key.Label {
		return nil
	}
	if msg.op == "open" {
		if msg.err != nil {
			m.details.errMsg = text.Safe(msg.err.Error())
			return nil
		}
		if m.details.busy() {
			return nil
		}
	}
	m.details.result(msg)
	if msg.err == nil && msg.op != "open" {
		// A new token: ask the server about it, not about the old one.
		return tea.Batch(m.loadKeys(), m.checkLive(msg.label))
	}
	return nil
}

// handleLiveness applies a server check of the details key; the answer of
// an older check, or one about another key, is dropped.
func (m *Model) handleLiveness(msg livenessMsg) tea.Cmd {
	m.endOp()
	if msg.seq != m.liveSeq || msg.label != m.details.key.Label {
		return nil
	}
	m.details.liveResult(msg)
	return nil
}

// handleOpDone applies the answer of logout, delete, rename, set default
// and mark used.
func (m *Model) handleOpDone(msg opDoneMsg) tea.Cmd {
	if msg.op != "markused" {
		m.endOp()
	}
	lbl := text.Safe(msg.label)
	switch msg.op {
	case "logout":
		if msg.seq == m.opSeq && msg.label == m.details.key.Label {
			m.details.loggedOut(msg.err)
		}
	case "delete":
		if msg.err != nil {
			m.keyList.errMsg = "delete failed: " + text.Safe(msg.err.Error())
			return nil
		}
		if m.current == msg.label {
			m.current = ""
		}
		m.toast, m.toastOK = fmt.Sprintf("Deleted %q.", lbl), true
	case "rename":
		if msg.err != nil {
			m.keyList.errMsg = "rename failed: " + text.Safe(msg.err.Error())
			if errors.Is(msg.err, store.ErrLabelTaken) {
				m.keyList.errMsg = "a key with this label exists; pick another"
			}
			return nil
		}
		if m.current == msg.label {
			m.current = msg.to
		}
		m.toast, m.toastOK = fmt.Sprintf("Renamed to %q.", text.Safe(msg.to)), true
	case "default":
		if msg.err != nil {
			m.keyList.errMsg = "set default failed: " + text.Safe(msg.err.Error())
			return nil
		}
		m.current = msg.label
		m.toast, m.toastOK = fmt.Sprintf("%q is now the default key.", lbl), true
	case "markused":
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
		m.toast, m.toastOK = "Nothing to copy: log in first.", false
		if msg.err != nil && !errors.Is(msg.err, store.ErrLoginNeeded) {
			m.toast = "Cannot read the token: " + text.Safe(msg.err.Error())
		}
		return nil
	}
	return m.copyToken(msg.label, msg.tokens, msg.header)
}
