package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// Commands. Each copies what it needs from the model before returning the
// closure, and the closure never touches the model: it calls the store and
// reports a typed message tagged with its request id.

// opTimeout bounds one network operation (auth has its own timeouts too).
const opTimeout = 2 * time.Minute

var errNoStore = errors.New("no store")

func (m *Model) loadKeys() tea.Cmd {
	m.loadSeq = m.nextSeq()
	seq, st := m.loadSeq, m.backend
	return func() tea.Msg {
		if st == nil {
			return keysLoadedMsg{seq: seq, err: errNoStore}
		}
		keys, err := st.Keys()
		if err != nil {
			return keysLoadedMsg{seq: seq, err: err}
		}
		cur := ""
		if len(keys) > 0 {
			if k, err := st.Resolve(""); err == nil {
				cur = k.Label
			}
		}
		return keysLoadedMsg{seq: seq, keys: keys, current: cur}
	}
}

// withTokens finishes an operation that produced a key: it reads the key's
// full token set for display.
func withTokens(st Backend, msg keyTokensMsg, k store.Key, err error) keyTokensMsg {
	msg.key, msg.err = k, err
	if err != nil {
		return msg
	}
	if ts, terr := st.Current(msg.label); terr == nil {
		msg.tokens = ts
	}
	return msg
}

func (m *Model) createCmd(seq int, nk store.NewKey) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		msg := keyTokensMsg{seq: seq, op: "create", label: nk.Label}
		if st == nil {
			msg.err = errNoStore
			return msg
		}
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, err := st.Create(ctx, nk)
		return withTokens(st, msg, k, err)
	}
}

func (m *Model) refreshCmd(seq int, label string, auto bool) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, err := st.Refresh(ctx, label)
		return withTokens(st, keyTokensMsg{seq: seq, op: "refresh", label: label, auto: auto}, k, err)
	}
}

func (m *Model) loginCmd(seq int, label, password string) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, err := st.Login(ctx, label, password)
		return withTokens(st, keyTokensMsg{seq: seq, op: "login", label: label}, k, err)
	}
}

// openCmd reads a key and its current token set (no network).
func (m *Model) openCmd(seq int, label string) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		k, err := st.Resolve(label)
		return withTokens(st, keyTokensMsg{seq: seq, op: "open", label: label}, k, err)
	}
}

// currentCmd reads a key's token set for op ("inspect").
func (m *Model) currentCmd(seq int, op, label string) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		ts, err := st.Current(label)
		return keyTokensMsg{seq: seq, op: op, label: label, tokens: ts, err: err}
	}
}

func (m *Model) logoutCmd(seq int, label string) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		_, err := st.Logout(ctx, label)
		return opDoneMsg{seq: seq, op: "logout", label: label, err: err}
	}
}

// simpleCmd runs a store call that only succeeds or fails.
func (m *Model) simpleCmd(seq int, op, label, to string, call func(Backend) error) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		return opDoneMsg{seq: seq, op: op, label: label, to: to, err: call(st)}
	}
}

func (m *Model) markUsedCmd(label string) tea.Cmd {
	st := m.backend
	seq := m.nextSeq()
	return func() tea.Msg {
		return opDoneMsg{seq: seq, op: "markused", label: label, err: st.MarkUsed(label)}
	}
}

func (m *Model) fetchForCopyCmd(seq int, label string, header bool) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		ts, err := st.Current(label)
		return copyReadyMsg{seq: seq, label: label, header: header, tokens: ts, err: err}
	}
}

// livenessCmd asks the server whether it still accepts label's access token.
func (m *Model) livenessCmd(seq int, label string) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		if st == nil {
			return livenessMsg{seq: seq, label: label, err: errNoStore}
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		live, err := st.Liveness(ctx, label)
		return livenessMsg{seq: seq, label: label, live: live, err: err}
	}
}

func (m *Model) verifyCmd(seq, which int, raw string) tea.Cmd {
	st, ver, ctx := m.backend, m.cfg.verifier, m.ctx
	return func() tea.Msg {
		if ver == nil || st == nil {
			return verifiedMsg{seq: seq, which: which, v: auth.Verification{State: auth.SigNotChecked, Reason: "no auth client to check signatures with"}}
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return verifiedMsg{seq: seq, which: which, v: ver.Verify(ctx, st.Connections(), raw)}
	}
}
