package store

import (
	"errors"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// A short-lived process (Options.ReadOnce: token, header, status) reads
// config.toml and state.db once: the first read that finds the index fresh
// keeps state.db open, read-only, with the fingerprint of config.toml it
// matched, and later reads of this Store use both. While state.db is held its
// shared lock keeps every writer out, and config.toml only changes inside a
// write transaction (under store.lock), so what was read stays true. The
// hold ends before this process writes (openDB for writing), before anything
// may wait long (a renewal over the network, a passphrase prompt), and at
// Close; the next read then opens state.db as usual.

// heldRead is the state.db a ReadOnce Store keeps open between reads.
type heldRead struct {
	db      *bolt.DB
	done    func() // closes db and releases its in-process lock
	fp      string // config.toml's fingerprint the index matched
	users   int    // reads running on db now
	dropped bool   // released: the last user closes db
}

// readHold guards a Store's heldRead.
type readHold struct {
	mu   sync.Mutex
	held *heldRead
}

// use returns the held state.db for one read, or nil.
func (h *readHold) use() *heldRead {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held != nil {
		h.held.users++
	}
	return h.held
}

// done ends a read begun with use.
func (h *readHold) done(r *heldRead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.users--
	if r.dropped && r.users == 0 {
		r.done()
	}
}

// keep holds db (open for reading, fresh against fp); it reports false when
// something is held already (the caller closes db).
func (h *readHold) keep(db *bolt.DB, done func(), fp string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held != nil {
		return false
	}
	h.held = &heldRead{db: db, done: done, fp: fp}
	return true
}

// fingerprint is config.toml's fingerprint the held read matched, or "".
func (h *readHold) fingerprint() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		return ""
	}
	return h.held.fp
}

// drop ends the hold: state.db is closed now, or by its last running read.
func (h *readHold) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.held
	if r == nil {
		return
	}
	h.held, r.dropped = nil, true
	if r.users == 0 {
		r.done()
	}
}

// viewHeld runs fn on the held state.db. ok is false when nothing is held,
// or the held read failed in a way the ordinary path handles (damage found
// while reading): the hold is dropped and the caller reads as usual.
func (s *Store) viewHeld(fn func(t *tx) error) (err error, ok bool) {
	r := s.hold.use()
	if r == nil {
		return nil, false
	}
	err = runGuarded(s.dbPath(), func() error {
		return r.db.View(func(btx *bolt.Tx) error {
			return fn(&tx{s: s, btx: btx})
		})
	})
	s.hold.done(r)
	if dmg := (*DamagedDBError)(nil); errors.As(err, &dmg) || errors.Is(err, errStale) {
		s.hold.drop()
		return nil, false
	}
	return err, true
}

// EndReadOnce ends Options.ReadOnce: what is held is released and from now
// on every read looks at the files again. The app reads its first screen
// once (ReadOnce), then runs on as a long-lived process.
func (s *Store) EndReadOnce() {
	s.readOnce.Store(false)
	s.hold.drop()
}
