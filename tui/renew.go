package tui

import (
	"container/heap"
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// Renewal of every key the app shows, not only the one on screen.
//
// A key with a way to renew (a live refresh token, or a grant that renews
// itself) is due at the one lifecycle policy's renewal time
// (auth.Expiry.RenewAt) of whichever ends first, its access token or its
// refresh window (refreshDeadline: neither is assumed to end first). The
// app keeps the due times in a min-heap (renewals.due) built with the key
// list, off Update, and fed by the keys that changed (handleChanges, a
// renewal's answer); one timer waits for the soonest. Nothing walks the
// keys on a tick. A renewal goes through Backend.Refresh (the key service)
// as the details screen's; at most renewInFlight run at a time; a failure
// marks the key's row and says so on the status line, and that key is not
// renewed again until its tokens change (no retry storm), but for a
// failure that may pass (the realm unreachable, slow or failing: a laptop
// waking before its network), tried again halfway to its deadline, while
// that is at least renewRetryMin away (a few tries in the last 30 s of a
// token, not one a tick). The details
// screen renews its own key while it is shown (it says "refreshing…").

// renewInFlight bounds the background renewals running at once.
const renewInFlight = 2

// renewRetryMin is the shortest wait before a renewal that failed in a
// way that may pass is tried again (halfway to the key's deadline).
const renewRetryMin = 2 * time.Second

// renewEntry is one due renewal: a key (its row in the key list) due at at
// (Unix nanoseconds) for the deadline it was computed from (dl: its low 32
// bits, enough to tell it from the next; 16 bytes an entry). An entry whose
// row now has another deadline is stale (the key changed: a newer entry
// was pushed) and is dropped when it comes up.
type renewEntry struct {
	at  int64
	row int32
	dl  uint32
}

// renewHeap is a min-heap of renewEntry by at (container/heap).
type renewHeap []renewEntry

func (h renewHeap) Len() int           { return len(h) }
func (h renewHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h renewHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *renewHeap) Push(x any)        { *h = append(*h, x.(renewEntry)) }
func (h *renewHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// renewals is the root's bookkeeping of background renewals.
type renewals struct {
	due      renewHeap
	inflight map[string]bool // labels being renewed
	// failed: by key id, the deadline a renewal failed for and why; the
	// key's row says "renewal failed" until its tokens change.
	failed map[string]renewFailure
	gen    int   // the armed timer's generation (older ones are dropped)
	armed  int64 // when the armed timer fires (Unix nanoseconds); 0: none
}

type renewFailure struct {
	deadline int64
	why      string
	// retryAt: a failure that may pass is tried again then (Unix
	// nanoseconds); 0: not until the key's tokens change.
	retryAt int64
}

// retryable reports whether a renewal that failed with err may work later
// with nothing changed: the realm was unreachable, slow or failing.
func retryable(err error) bool {
	switch auth.KindOf(err) {
	case auth.KindNetwork, auth.KindTimeout, auth.KindServer:
		return true
	}
	return false
}

// renewTickMsg is the renewal timer's.
type renewTickMsg struct{ gen int }

// renewedMsg answers a background renewal of label's key.
type renewedMsg struct {
	label    string
	id       string
	deadline int64
	key      store.Key
	tokens   *auth.TokenSet
	err      error
}

// renewEntryOf is k's due renewal as row row, seen at now; false when k
// has no way to renew: no token, logged out, no stated expiry, or neither
// a live refresh token nor a grant that renews itself. A key that renews
// itself but whose token had already expired when the app saw it is left
// as it is (r renews it): opening the app does not renew every stale key.
func renewEntryOf(k store.Key, row int32, now time.Time) (renewEntry, bool) {
	t := k.Token
	if t.ObtainedAt.IsZero() || k.LoggedOut || !k.EndPending.IsZero() {
		return renewEntry{}, false
	}
	deadline := refreshDeadline(&t)
	if deadline.IsZero() {
		return renewEntry{}, false
	}
	liveRefresh := k.HasRefreshToken && !t.Refresh().Expired(now)
	if !liveRefresh && (!k.RenewsItself() || !now.Before(deadline)) {
		return renewEntry{}, false
	}
	at := auth.Expiry{ObtainedAt: t.ObtainedAt, At: deadline}.RenewAt()
	return renewEntry{at: at.UnixNano(), row: row, dl: uint32(deadline.UnixNano())}, true
}

// rowDeadline is the deadline of r's key as the row keeps it (the same
// times refreshDeadline reads).
func rowDeadline(r *KeyRow) int64 {
	if r.refresh != 0 && (r.access == 0 || r.refresh < r.access) {
		return r.refresh
	}
	return r.access
}

// setRenewals takes the due renewals built with a fresh key list.
func (m *Model) setRenewals(due renewHeap) {
	m.renew.due = due
	m.renew.armed = 0 // the rows changed: arm again for the new top
}

// pushRenewals adds the due renewals of keys that changed (rows of the
// current key list; old is the list before): a key whose tokens did not
// change (another process used it) keeps the entry it has.
func (m *Model) pushRenewals(old *keyIndex, keys []store.Key, rows []int32) {
	for i, k := range keys {
		before, now := old.row(rows[i]), m.keys.row(rows[i])
		if before.flags == now.flags && before.access == now.access && before.refresh == now.refresh {
			continue
		}
		if e, ok := renewEntryOf(k, rows[i], m.c.now); ok {
			heap.Push(&m.renew.due, e)
		}
	}
	// Entries of keys that changed again before they were due pile up;
	// keep the heap within a few times the keys.
	if n := len(m.renew.due); n > 2*m.keys.len()+1024 {
		live := m.renew.due[:0]
		for _, e := range m.renew.due {
			if m.renewCurrent(e) {
				live = append(live, e)
			}
		}
		m.renew.due = live
		heap.Init(&m.renew.due)
	}
}

// renewCurrent reports whether e still describes its row's key.
func (m *Model) renewCurrent(e renewEntry) bool {
	if int(e.row) >= m.keys.len() {
		return false
	}
	r := m.keys.row(e.row)
	return !r.has(rowLoggedOut) && uint32(rowDeadline(r)) == e.dl
}

// renewOn: background renewal runs (the details screen's a turns it off
// and on, for every key).
func (m *Model) renewOn() bool { return m.details.auto && m.backend != nil }

// armRenew arms the one renewal timer for the soonest due renewal, when
// it is not armed for that time already; nothing when renewal is off or
// as many renewals as may run are running (the next answer arms it).
func (m *Model) armRenew() tea.Cmd {
	r := &m.renew
	if !m.renewOn() || len(r.due) == 0 || len(r.inflight) >= renewInFlight {
		r.armed = 0
		return nil
	}
	at := r.due[0].at
	if r.armed == at {
		return nil
	}
	r.armed = at
	r.gen++
	gen := r.gen
	return m.cfg.after(max(0, time.Duration(at-m.c.now.UnixNano())), func(time.Time) tea.Msg { return renewTickMsg{gen: gen} })
}

// handleRenewTick starts the renewals that are due (as many as may run).
func (m *Model) handleRenewTick(msg renewTickMsg) tea.Cmd {
	if msg.gen != m.renew.gen {
		return nil
	}
	m.renew.armed = 0
	return m.startDueRenewals()
}

// startDueRenewals pops the due entries and renews their keys; stale
// entries and keys renewing already or failed for this deadline are
// dropped; the key on the details screen (which renews its own) waits.
func (m *Model) startDueRenewals() tea.Cmd {
	r := &m.renew
	if !m.renewOn() {
		return nil
	}
	if r.inflight == nil {
		r.inflight = map[string]bool{}
	}
	now := m.c.now.UnixNano()
	var cmds []tea.Cmd
	for len(r.due) > 0 && r.due[0].at <= now && len(r.inflight) < renewInFlight {
		row, ok := m.renewDue(heap.Pop(&r.due).(renewEntry), now)
		if !ok {
			continue
		}
		r.inflight[row.label] = true
		cmds = append(cmds, m.renewCmd(row.label, row.id, rowDeadline(row)))
	}
	return tea.Batch(cmds...)
}

// renewDue is the row of due entry e when its key is to be renewed now:
// not when e is stale, the key is held (renewing already, or failed for
// this deadline and not due for a retry), or its refresh token ended; the key on the details screen is looked at
// again in a second.
func (m *Model) renewDue(e renewEntry, now int64) (*KeyRow, bool) {
	r := &m.renew
	if !m.renewCurrent(e) {
		return nil, false
	}
	row := m.keys.row(e.row)
	if r.held(row, e, now) {
		return nil, false
	}
	if m.active == screenDetails && m.details.key.Label == row.label {
		// The details screen renews it (and says so) on its tick;
		// looked at again in a second, for when it is closed first.
		heap.Push(&r.due, renewEntry{at: now + int64(time.Second), row: e.row, dl: e.dl})
		return nil, false
	}
	// The refresh token may have ended since the entry was made (a
	// late timer: the machine slept).
	if !row.has(rowRenewsItself) && (!row.has(rowRefreshToken) || row.refresh != 0 && row.refresh <= now) {
		return nil, false
	}
	return row, true
}

// held reports whether the key of due entry e (its row) waits: renewing
// already, or failed for this deadline and not due for a retry yet (whose
// entry is kept: a list read again since dropped it with the old heap).
func (r *renewals) held(row *KeyRow, e renewEntry, now int64) bool {
	f, ok := r.failed[row.id]
	failed := ok && f.deadline == rowDeadline(row)
	if !(failed && (f.retryAt == 0 || now < f.retryAt) || r.inflight[row.label]) {
		return false
	}
	if failed && f.retryAt > now {
		heap.Push(&r.due, renewEntry{at: f.retryAt, row: e.row, dl: e.dl})
	}
	return true
}

// renewCmd renews label's key through the backend.
func (m *Model) renewCmd(label, id string, deadline int64) tea.Cmd {
	st, ctx := m.backend, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		k, ts, err := st.Refresh(ctx, label)
		return renewedMsg{label: label, id: id, deadline: deadline, key: k, tokens: ts, err: err}
	}
}

// handleRenewed puts a renewed key into the key list (and its next due
// renewal into the heap), or marks the failure on its row and the status
// line; then the next due renewal may start.
func (m *Model) handleRenewed(msg renewedMsg) tea.Cmd {
	delete(m.renew.inflight, msg.label)
	if msg.err != nil {
		why := errText(msg.err)
		f := renewFailure{deadline: msg.deadline, why: why}
		now := m.c.now.UnixNano()
		if row, ok := m.keys.indexOf(msg.label); ok && retryable(msg.err) && time.Duration(msg.deadline-now)/2 >= renewRetryMin {
			f.retryAt = now + (msg.deadline-now)/2
			heap.Push(&m.renew.due, renewEntry{at: f.retryAt, row: int32(row), dl: uint32(msg.deadline)})
		}
		m.renew.failed[msg.id] = f
		m.notice = text.Cleanf("could not renew API key %q: %s", msg.label, why)
		return m.startDueRenewals()
	}
	delete(m.renew.failed, msg.id)
	if d := m.details; d.key.ID == msg.id && d.state == detailsIdle && !d.prompt && msg.tokens != nil {
		d.open(msg.key, msg.tokens) // its details were opened while it renewed
	}
	if m.cfg.changes != nil {
		// A watched store: the renewal's write comes back as a change
		// (handleChanges puts the row and its next renewal in place,
		// coalesced with the other renewals and changes of the moment).
		return m.startDueRenewals()
	}
	if m.keys == nil || !m.applyChangedKeys([]store.Key{msg.key}) {
		return tea.Batch(m.loadKeys(), m.startDueRenewals())
	}
	return m.startDueRenewals()
}
