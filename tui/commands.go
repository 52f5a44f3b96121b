package tui

import (
	"context"
	"errors"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// Commands. Each copies what it needs from the model before returning the
// closure, and the closure never touches the model: it calls the store and
// reports a typed message tagged with its request id.

// opTimeout bounds one network operation (auth has its own timeouts too).
const opTimeout = 2 * time.Minute

var errNoStore = errors.New("no store")

// loadKeys reads the key list: one walk of the store into a keyIndex,
// keeping whole only the current key, the details screen's key and the
// newest (keyPicks).
func (m *Model) loadKeys() tea.Cmd {
	seq, st := m.req.start(slotKeys), m.backend
	b := newIndexBuilder(m.current, m.details.key.ID, os.Getenv(store.EnvKey))
	now := m.cfg.now
	return func() tea.Msg {
		if st == nil {
			return keysLoadedMsg{seq: seq, err: errNoStore}
		}
		b.now = now()
		// The stamp first: a change after it is seen by the next check.
		stamp, _ := st.Stamp()
		if err := st.EachKey(b.add); err != nil {
			return keysLoadedMsg{seq: seq, err: err, stamp: stamp}
		}
		x, picks := b.done()
		return keysLoadedMsg{seq: seq, keys: x, picks: picks, current: picks.current, stamp: stamp, renew: b.renew}
	}
}

// loadChanges reads what changed since stamp since: the keys another
// process used or renewed (handleChanges puts them in the key list), or
// that the whole list must be read again.
func (m *Model) loadChanges(since store.Stamp) tea.Cmd {
	seq, st := m.req.start(slotKeys), m.backend
	return func() tea.Msg {
		ch, err := st.ChangesSince(since)
		return changesMsg{seq: seq, ch: ch, err: err}
	}
}

// checkStamp reads the store's stamp (a few stat calls): the tick compares
// it with the stamp of the last key list to see what other shipkey
// processes changed.
func (m *Model) checkStamp() tea.Cmd {
	seq, st := m.req.start(slotStamp), m.backend
	return func() tea.Msg {
		if st == nil {
			return stampMsg{seq: seq, err: errNoStore}
		}
		stamp, err := st.Stamp()
		return stampMsg{seq: seq, stamp: stamp, err: err}
	}
}

// withTokens finishes an operation that produced a key and the token set it
// holds.
func withTokens(msg keyTokensMsg, k store.Key, ts *auth.TokenSet, err error) keyTokensMsg {
	msg.key, msg.err = k, err
	if err == nil {
		msg.tokens = ts
	}
	return msg
}

func (m *Model) createCmd(ctx context.Context, seq int, sub submission) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
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
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, ts, err := st.Create(ctx, nk)
		return withTokens(msg, k, ts, err)
	}
}

func (m *Model) refreshCmd(seq int, label string, auto bool) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, ts, err := st.Refresh(ctx, label)
		return withTokens(keyTokensMsg{seq: seq, op: opRefresh, label: label, auto: auto}, k, ts, err)
	}
}

func (m *Model) loginCmd(seq int, label, password string) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, ts, err := st.Login(ctx, label, store.LoginOptions{Password: password})
		return withTokens(keyTokensMsg{seq: seq, op: opLogin, label: label}, k, ts, err)
	}
}

// openCmd reads a key and its current token set (no network).
func (m *Model) openCmd(seq int, label string) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		k, err := st.Resolve(label)
		var ts *auth.TokenSet
		if err == nil {
			ts, _ = st.Current(label) // none yet, or logged out: shown as such
		}
		return withTokens(keyTokensMsg{seq: seq, op: opOpen, label: label}, k, ts, err)
	}
}

// currentCmd reads a key's token set for op (opInspect).
func (m *Model) currentCmd(seq int, op opKind, label string) tea.Cmd {
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
		res, err := st.Logout(ctx, label)
		return opDoneMsg{seq: seq, op: opLogout, label: label, end: res, err: err}
	}
}

// simpleCmd runs a store call that only succeeds or fails.
func (m *Model) simpleCmd(seq int, op opKind, label, to string, call func(Backend) error) tea.Cmd {
	st := m.backend
	return func() tea.Msg {
		return opDoneMsg{seq: seq, op: op, label: label, to: to, err: call(st)}
	}
}

// removeCmd deletes label's key, ending its session at the server first;
// the answer carries what the server did.
func (m *Model) removeCmd(seq int, label string) tea.Cmd {
	st, parent := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, opTimeout)
		defer cancel()
		res, err := st.Remove(ctx, label)
		return opDoneMsg{seq: seq, op: opDelete, label: label, end: res, err: err}
	}
}

func (m *Model) markUsedCmd(label string) tea.Cmd {
	st := m.backend
	seq := m.req.next()
	return func() tea.Msg {
		return opDoneMsg{seq: seq, op: opMarkUsed, label: label, err: st.MarkUsed(label)}
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

// verifyCmd checks a token's signature: against the key set at jwks when
// given (as `inspect --verify --jwks URL`), else against the keys of the
// realm that issued it, one of the store's connections.
func (m *Model) verifyCmd(seq, which int, raw, jwks string) tea.Cmd {
	st, ver, ctx := m.backend, m.cfg.verifier, m.ctx
	return func() tea.Msg {
		if ver == nil || st == nil {
			return verifiedMsg{seq: seq, which: which, v: auth.Verification{State: auth.SigNotChecked, Reason: text.Trusted("no auth client to check signatures with")}}
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if jwks == "" {
			return verifiedMsg{seq: seq, which: which, v: ver.Verify(ctx, st.Connections(), raw)}
		}
		kv, ok := ver.(KeySetVerifier)
		if !ok {
			return verifiedMsg{seq: seq, which: which, v: auth.Verification{State: auth.SigNotChecked, Reason: text.Trusted("this auth client cannot fetch a key set")}}
		}
		ks, err := kv.FetchKeySet(ctx, jwks)
		if err != nil {
			return verifiedMsg{seq: seq, which: which, v: auth.Verification{State: auth.SigNotChecked, Reason: text.Cleanf("the JWKS URL: %v", err)}}
		}
		return verifiedMsg{seq: seq, which: which, v: kv.VerifyWithKeySet(raw, ks)}
	}
}
