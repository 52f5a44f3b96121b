package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// state.db (bbolt) is the store's index and its volatile state, so that a
// call costs the same with one key or 100,000:
//
//	meta     version, the fingerprint of the config.toml the index was built
//	         from, the default label, the settings, the teams (each its
//	         [[teams]] table, under the fingerprint it was read from)
//	entries  label -> the key's definition (a copy of its [[keys]] table)
//	ids      key ID -> label
//	state    key ID -> last used, redacted token timing, masked token,
//	         logged-out flag, secrets backend (never a secret)
//
// config.toml stays the human-readable, hand-editable source of truth for
// keys and settings: entries, ids and the settings are rebuilt from it, under
// store.lock, whenever its fingerprint (size, mtime, inode, and a hash of the
// content while it is small) differs from the recorded one. `shipkey token`
// thus costs a stat, a B-tree lookup and one record read, and never parses
// a large config.toml. bbolt's file lock makes every transaction atomic
// across processes (one writer, or many readers) and its copy-on-write pages
// with checksummed meta pages mean a torn write never loses a key.
//
// No secret is ever written to state.db: deleted bbolt pages keep old bytes,
// and secrets must be gone from the disk's files once a key is removed.

const (
	dbFileName = "state.db"
	dbVersion  = "2" // state.json was version 1
)

var (
	bucketMeta    = []byte("meta")
	bucketEntries = []byte("entries")
	bucketIDs     = []byte("ids")
	bucketState   = []byte("state")
	// bucketRemoved: id → backend name of the keys whose definition a
	// `keys rm` removed and whose secrets it has not deleted yet (its two
	// commits); the sweep deletes what a kill in between left.
	bucketRemoved = []byte("removed")
	// bucketChanges: change sequence (8 bytes, big endian) → id of the
	// key whose state record was written or deleted, the last changesKept
	// of them (changes.go); its bucket sequence is the last change's.
	bucketChanges = []byte("changes")

	metaVersion  = []byte("version")
	metaConfig   = []byte("config")
	metaDefault  = []byte("default")
	metaSettings = []byte("settings")
	metaTeams    = []byte("teams")
)

// errStale: the index does not match config.toml (or the store is not
// migrated yet); the reader must rebuild it under store.lock and retry.
var errStale = errors.New("index is stale")

// fpAbsent is the fingerprint of a missing config.toml.
const fpAbsent = "absent"

// smallConfig is the size up to which the fingerprint hashes the content:
// cheap, and it catches an edit that keeps size and mtime.
const smallConfig = 64 << 10

// configFingerprint identifies config.toml's content without parsing it.
func configFingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fpAbsent, nil
	}
	if err != nil {
		return "", fileError("read", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fileError("read", path, err)
	}
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, fi.Size(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, fileIdentity(fi), 10)
	if fi.Size() <= smallConfig {
		data := make([]byte, fi.Size()+1)
		n, _ := f.ReadAt(data, 0)
		sum := sha256.Sum256(data[:n])
		b = append(b, ':')
		b = hex.AppendEncode(b, sum[:12])
	}
	return string(b), nil
}

func (s *Store) dbPath() string { return filepath.Join(s.stateDir, dbFileName) }

// dbLocks orders this process's goroutines on one state.db before they
// contend for its file lock (bbolt polls a held lock every 50 ms).
var dbLocks sync.Map // path -> *sync.RWMutex

// openDB opens state.db for one transaction: shared for reading, exclusive
// for writing; the wait for another process is bounded by ctx (or
// defaultLockWait). A missing file is os.ErrNotExist when reading.
func (s *Store) openDB(ctx context.Context, write bool) (*bolt.DB, func(), error) {
	path := s.dbPath()
	unlock, err := s.lockDBInProcess(path, write)
	if err != nil {
		return nil, nil, err
	}
	wait := defaultLockWait
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	seen := dbIdentity(path)
	db, f, err := openBolt(path, write, wait)
	if err != nil {
		unlock()
		return nil, nil, dbOpenError(path, seen, err)
	}
	if f != nil && !write {
		dbFiles.Store(db, f) // read by pread too (each_scan.go)
	}
	return db, func() { dbFiles.Delete(db); _ = db.Close(); unlock() }, nil
}

// lockDBInProcess takes this process's lock on state.db at path, shared
// for reading, exclusive for writing, and returns its unlock. A state.db
// missing or still being created is os.ErrNotExist when reading.
func (s *Store) lockDBInProcess(path string, write bool) (unlock func(), err error) {
	v, _ := dbLocks.LoadOrStore(path, new(sync.RWMutex))
	mu := v.(*sync.RWMutex)
	if write {
		s.hold.drop() // this process's own read lock would keep it out
		if err := ensureDir(s.stateDir); err != nil {
			return nil, err
		}
		mu.Lock()
		return mu.Unlock, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, os.ErrNotExist
		}
		return nil, fileError("read", path, err)
	}
	if fi.Size() == 0 {
		return nil, os.ErrNotExist // being created: wait for its creator under store.lock
	}
	mu.RLock()
	return mu.RUnlock, nil
}

// openBolt opens state.db at path once: checked, then handed to bbolt, which
// waits up to wait for another process's lock; f is the file bbolt reads
// (nil when it opened its own). When it cannot be opened here, checkDBFile
// and bbolt say why.
func openBolt(path string, write bool, wait time.Duration) (db *bolt.DB, f *os.File, err error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR | os.O_CREATE
	}
	bopts := &bolt.Options{Timeout: wait, ReadOnly: !write}
	if of, ferr := os.OpenFile(path, flag, filePerm); ferr == nil {
		if err = checkDBOpen(of, path); err != nil {
			_ = of.Close()
		} else {
			f = of
			bopts.OpenFile = func(string, int, os.FileMode) (*os.File, error) { return f, nil }
		}
	} else {
		err = checkDBFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	err = runGuarded(path, func() (err error) {
		db, err = bolt.Open(path, filePerm, bopts)
		return err
	})
	if err != nil {
		if f != nil {
			_ = f.Close() // bbolt may have closed it already
		}
		return nil, nil, err
	}
	return db, f, nil
}

// dbOpenError is what opening state.db at path (seen: its identity then)
// failing with err says: damage, a lock wait that ran out, no file, a file
// system that refuses, or else damage that bbolt found.
func dbOpenError(path, seen string, err error) error {
	var dmg *DamagedDBError
	switch {
	case errors.As(err, &dmg):
		dmg.seen = seen
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return lockWaitError(path, context.DeadlineExceeded)
	case errors.Is(err, os.ErrNotExist):
		return os.ErrNotExist
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.ENOSPC):
		return fileError("open", path, err)
	}
	// What bbolt refuses to open (bad magic or checksum, a file too small,
	// an unknown version…) is damage.
	var pe *fs.PathError
	reason := err.Error()
	if errors.As(err, &pe) {
		reason = pe.Err.Error()
	}
	return &DamagedDBError{Path: path, Reason: reason, seen: seen}
}

// tx is one transaction on the store: state.db's index and state, and
// config.toml, parsed only when a change needs it (under store.lock).
type tx struct {
	s   *Store
	btx *bolt.Tx // nil: an empty store with nothing on disk yet

	locked        bool        // store.lock is held: config.toml may change
	migratingFrom string      // the legacy state file being migrated, for messages
	cfg           *configFile // parsed config.toml, once needed
	cfgDirty      bool

	ed entryDecoder
	sd stateDecoder
}

func (t *tx) bucket(name []byte) *bolt.Bucket {
	if t.btx == nil {
		return nil
	}
	return t.btx.Bucket(name)
}

// damaged is a record that does not decode: the index is damaged, and is
// set aside and rebuilt like a damaged file.
func (t *tx) damaged(what string) error {
	return &DamagedDBError{Path: t.s.dbPath(), Reason: "damaged record (" + what + ")", Faulted: true}
}

func (t *tx) meta(key []byte) []byte {
	if b := t.bucket(bucketMeta); b != nil {
		return b.Get(key)
	}
	return nil
}

// fresh reports whether the index was built from the config.toml with
// fingerprint fp, by this version, teams included.
func (t *tx) fresh(fp string) bool {
	return string(t.meta(metaVersion)) == dbVersion && string(t.meta(metaConfig)) == fp && t.teamsFresh(fp)
}

// teamsFresh reports whether the teams record was read from the config.toml
// with fingerprint fp. An index written by a release that did not record the
// teams (or changed config.toml without updating them) is not fresh: txn
// records them.
func (t *tx) teamsFresh(fp string) bool {
	fpOf, _, ok := bytes.Cut(t.meta(metaTeams), []byte("\n"))
	return ok && string(fpOf) == fp
}

// teams is the [[teams]] tables of config.toml as the index recorded them
// (unsorted).
func (t *tx) teams() ([]TeamConn, error) {
	_, rec, ok := bytes.Cut(t.meta(metaTeams), []byte("\n"))
	if !ok {
		return nil, nil // an empty store: nothing on disk yet
	}
	var teams []TeamConn
	if err := json.Unmarshal(rec, &teams); err != nil {
		return nil, t.damaged("teams")
	}
	return teams, nil
}

func (t *tx) byLabel(label string) (keyEntry, bool, error) {
	b := t.bucket(bucketEntries)
	if b == nil {
		return keyEntry{}, false, nil
	}
	v := b.Get([]byte(label))
	if v == nil {
		return keyEntry{}, false, nil
	}
	e, err := t.ed.decode(v)
	if err != nil {
		return keyEntry{}, false, t.damaged("key " + quoteLabel(label))
	}
	return e, true, nil
}

func (t *tx) byID(id string) (keyEntry, bool, error) {
	b := t.bucket(bucketIDs)
	if b == nil {
		return keyEntry{}, false, nil
	}
	label := b.Get([]byte(id))
	if label == nil {
		return keyEntry{}, false, nil
	}
	return t.byLabel(string(label))
}

func (t *tx) state(id string) (keyState, error) {
	b := t.bucket(bucketState)
	if b == nil {
		return keyState{}, nil
	}
	v := b.Get([]byte(id))
	if v == nil {
		return keyState{}, nil
	}
	ks, err := t.sd.decode(v)
	if err != nil {
		return keyState{}, t.damaged("state of key id " + quoteLabel(id))
	}
	return ks, nil
}

func (t *tx) putState(id string, ks keyState) error {
	ks.Token = ks.Token.Redacted()
	b, err := t.btx.CreateBucketIfNotExists(bucketState)
	if err != nil {
		return err
	}
	if err := b.Put([]byte(id), encodeState(ks)); err != nil {
		return err
	}
	return t.noteChanged(id)
}

func (t *tx) deleteState(id string) error {
	if b := t.bucket(bucketState); b != nil {
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		return t.noteChanged(id)
	}
	return nil
}

// markRemoved records that key id's definition is gone and its secrets, in
// backend, are still to be deleted.
func (t *tx) markRemoved(id, backend string) error {
	b, err := t.btx.CreateBucketIfNotExists(bucketRemoved)
	if err != nil {
		return err
	}
	return b.Put([]byte(id), []byte(backend))
}

// clearRemoved drops markRemoved's record: the secrets were deleted.
func (t *tx) clearRemoved(id string) error {
	if b := t.bucket(bucketRemoved); b != nil {
		return b.Delete([]byte(id))
	}
	return nil
}

func (t *tx) defaultLabel() string { return string(t.meta(metaDefault)) }

// key makes the Key of entry e.
func (t *tx) key(e keyEntry, def string) (Key, error) {
	ks, err := t.state(e.ID)
	if err != nil {
		return Key{}, err
	}
	return makeKey(e, ks, def), nil
}

// count returns the number of keys, up to limit.
func (t *tx) count(limit int) int {
	b := t.bucket(bucketEntries)
	if b == nil {
		return 0
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n < limit; k, _ = c.Next() {
		n++
	}
	return n
}

// keys returns every key in label order. Entries are read in label order
// and states in id order, each by one sequential cursor walk, and joined by
// sorting positions by id: a B-tree search per key would cost twice as much
// at 100,000 keys.
func (t *tx) keys() ([]Key, error) {
	b := t.bucket(bucketEntries)
	if b == nil {
		return []Key{}, nil
	}
	def := t.defaultLabel()
	keys := make([]Key, 0, b.Stats().KeyN)
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, err := t.ed.decode(v)
		if err != nil {
			return nil, t.damaged("key " + quoteLabel(string(k)))
		}
		keys = append(keys, makeKey(e, keyState{}, def))
	}
	st := t.bucket(bucketState)
	if st == nil || len(keys) == 0 {
		return keys, nil
	}
	byID := make([]int32, len(keys))
	for i := range byID {
		byID[i] = int32(i)
	}
	slices.SortFunc(byID, func(a, b int32) int { return strings.Compare(keys[a].ID, keys[b].ID) })
	sc := st.Cursor()
	k, v := sc.First()
	for _, i := range byID {
		id := keys[i].ID
		for k != nil && string(k) < id {
			k, v = sc.Next()
		}
		if k == nil {
			break
		}
		if string(k) != id {
			continue
		}
		ks, err := t.sd.decode(v)
		if err != nil {
			return nil, t.damaged("state of key " + quoteLabel(keys[i].Label))
		}
		keys[i].setState(ks)
	}
	return keys, nil
}

// settingsRecord is the settings part of config.toml as the index keeps it.
type settingsRecord struct {
	Secrets        string `json:"secrets,omitempty"`
	ClipboardClear string `json:"clipboard_clear,omitempty"`
	AutoRefresh    *bool  `json:"auto_refresh,omitempty"`
	Timeout        string `json:"timeout,omitempty"`
}

func (t *tx) settings() Settings {
	c := &configFile{}
	if v := t.meta(metaSettings); v != nil {
		var r settingsRecord
		if json.Unmarshal(v, &r) == nil {
			c.Secrets, c.ClipboardClear, c.AutoRefresh, c.Timeout = r.Secrets, r.ClipboardClear, r.AutoRefresh, r.Timeout
		}
	}
	return c.settings()
}

// --- rebuilding the index from config.toml -------------------------------------

// reindex rebuilds entries, ids, the default and the settings from
// config.toml (caller holds store.lock). A config.toml without keys while
// the store holds some keys' state or secrets is an error: it was emptied or
// truncated, and writing anything now would orphan every key.
func (t *tx) reindex(fp string) error {
	path := t.s.configPath()
	cfg, err := loadConfig(path)
	if err != nil {
		if emptied, _ := configEmptied(path); emptied {
			if ierr := t.integrity(path); ierr != nil {
				return ierr
			}
		}
		return err
	}
	if len(cfg.Keys) == 0 {
		if err := t.integrity(path); err != nil {
			return err
		}
	}
	for _, name := range [][]byte{bucketEntries, bucketIDs} {
		if t.btx.Bucket(name) != nil {
			if err := t.btx.DeleteBucket(name); err != nil {
				return err
			}
		}
	}
	err = t.putSorted(bucketEntries, len(cfg.Keys), func(i int) ([]byte, []byte) {
		return []byte(cfg.Keys[i].Label), encodeEntry(cfg.Keys[i])
	})
	if err != nil {
		return err
	}
	err = t.putSorted(bucketIDs, len(cfg.Keys), func(i int) ([]byte, []byte) {
		return []byte(cfg.Keys[i].ID), []byte(cfg.Keys[i].Label)
	})
	if err != nil {
		return err
	}
	t.cfg = cfg
	return t.putConfigMeta(fp)
}

// putSorted puts n records, record(i) each, into bucket name (made when
// missing), in the order of their keys and with full pages: the records of
// a rebuild, into a bucket this transaction made or emptied. Until it commits, bbolt keeps a new bucket's records in one node,
// and each record put before others moves all of them: in config.toml's
// order (ids are random) the rebuild of 100,000 keys took 28 s of CPU, in
// key order it takes a fraction of it.
func (t *tx) putSorted(name []byte, n int, record func(i int) (k, v []byte)) error {
	b, err := t.btx.CreateBucketIfNotExists(name)
	if err != nil {
		return err
	}
	type kv struct{ k, v []byte }
	recs := make([]kv, n)
	for i := range recs {
		recs[i].k, recs[i].v = record(i)
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	b.FillPercent = 1.0
	for _, r := range recs {
		if t.s.hooks.indexPut != nil {
			t.s.hooks.indexPut(name, r.k)
		}
		if err := b.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// putConfigMeta records the default, the settings and the fingerprint of
// the config.toml that t.cfg now is.
func (t *tx) putConfigMeta(fp string) error {
	meta, err := t.btx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	set, err := json.Marshal(settingsRecord{Secrets: t.cfg.Secrets, ClipboardClear: t.cfg.ClipboardClear, AutoRefresh: t.cfg.AutoRefresh, Timeout: t.cfg.Timeout})
	if err != nil {
		return err
	}
	teams, err := json.Marshal(t.cfg.Teams)
	if err != nil {
		return err
	}
	teams = append([]byte(fp+"\n"), teams...)
	for k, v := range map[string][]byte{string(metaDefault): []byte(t.cfg.Default), string(metaSettings): set, string(metaConfig): []byte(fp), string(metaTeams): teams} {
		if err := meta.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}

// configEmptied reports whether config.toml is present but holds nothing: empty,
// blank, comments only, or the JSON null a broken writer leaves.
func configEmptied(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' || bytes.Equal(line, []byte("null")) || len(bytes.Trim(line, "\x00")) == 0 {
			continue
		}
		return false, nil
	}
	return true, nil
}

// integrity is the check of a config.toml without keys: it must not sit beside
// state or secrets of keys it lacks.
func (t *tx) integrity(cfgPath string) error {
	n := 0
	if b := t.bucket(bucketState); b != nil {
		// A cursor, not Stats: it sees this transaction's own writes too.
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
	}
	other := displayPath(t.s.dbPath())
	if t.migratingFrom != "" {
		other = displayPath(t.migratingFrom)
	}
	_, statErr := os.Stat(cfgPath)
	if n == 0 {
		if statErr != nil {
			return nil // no config.toml at all: a new store
		}
		for _, dir := range t.s.secretDirs() {
			if c := countSecretFiles(dir); c > 0 {
				n, other = c, displayPath(dir)
				break
			}
		}
	}
	if n == 0 {
		return nil
	}
	what := "holds no keys"
	if statErr != nil {
		what = "is missing"
	}
	return fmt.Errorf("%s %s, but %s holds the data of %d %s: the config was emptied or cut short; "+
		"restore %s from a backup, or move %s away to start over (nothing was changed)",
		displayPath(cfgPath), what, other, n, plural(n, "key", "keys"), configFileName, displayPath(t.s.stateDir))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// --- reading and writing ------------------------------------------------------

// view runs fn on a read-only transaction over an index that matches
// config.toml, rebuilding it first (under store.lock) when it does not.
func (s *Store) view(fn func(t *tx) error) error {
	return s.retryStale(context.Background(), func() (bool, error) { return s.viewOnce(fn) })
}

// viewOnce is one attempt of view. final: its error (or nil) is view's,
// not one to set aside a damaged state.db for or rebuild a stale index
// after.
func (s *Store) viewOnce(fn func(t *tx) error) (final bool, err error) {
	if s.readOnce.Load() {
		if err, ok := s.viewHeld(fn); ok {
			return true, err
		}
	}
	fp, err := configFingerprint(s.configPath())
	if err != nil {
		return true, err
	}
	db, done, err := s.openDB(context.Background(), false)
	switch dmg := (*DamagedDBError)(nil); {
	case errors.Is(err, os.ErrNotExist):
		if fp == fpAbsent && !s.hasLegacyFiles() {
			return true, fn(&tx{s: s}) // an empty store: nothing on disk yet
		}
		return false, errStale
	case errors.As(err, &dmg):
		return false, err // set aside by retryStale
	case err != nil:
		return true, err
	}
	return false, s.viewDB(db, done, fp, fn)
}

// viewDB runs fn on a read-only transaction of db when its index matches
// config.toml of fingerprint fp (errStale otherwise), and closes db (done)
// unless the store keeps it open for the next read (readOnce).
func (s *Store) viewDB(db *bolt.DB, done func(), fp string, fn func(t *tx) error) error {
	fresh := false
	err := runGuarded(s.dbPath(), func() error {
		return db.View(func(btx *bolt.Tx) error {
			t := &tx{s: s, btx: btx}
			if !t.fresh(fp) {
				return errStale
			}
			fresh = true
			return fn(t)
		})
	})
	dmg := (*DamagedDBError)(nil)
	if !fresh || !s.readOnce.Load() || errors.As(err, &dmg) || !s.hold.keep(db, done, fp) {
		done()
	}
	return err
}

// retryStale runs once until it succeeds or fails otherwise: a damaged
// state.db is set aside (under store.lock) and a stale index rebuilt before
// the next attempt, a few times. An attempt whose result is final ends it.
func (s *Store) retryStale(ctx context.Context, once func() (final bool, err error)) error {
	for attempt := 0; ; attempt++ {
		final, err := once()
		if final {
			return err
		}
		if dmg := (*DamagedDBError)(nil); errors.As(err, &dmg) && attempt < 3 {
			if err := s.salvage(ctx, dmg); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, errStale) {
			return err
		}
		if attempt == 3 {
			return fmt.Errorf("%s keeps changing; try again", displayPath(s.configPath()))
		}
		if err := s.ensure(ctx); err != nil {
			return err
		}
	}
}

// write runs fn on a read-write transaction (state changes: Last Used,
// tokens, logout). It does not take store.lock: bbolt's own lock orders
// writers. When the index is stale it is rebuilt first. It never sweeps
// (sweep.go): its cost must not grow with the number of keys.
func (s *Store) write(ctx context.Context, fn func(t *tx) error) error {
	ctx, cancel := lockContext(ctx)
	defer cancel()
	return s.retryStale(ctx, func() (bool, error) { return false, s.txn(ctx, false, fn) })
}

// update is write under store.lock, for changes of config.toml (new,
// renamed, removed keys, the default).
func (s *Store) update(ctx context.Context, fn func(t *tx) error) error {
	ctx, cancel := lockContext(ctx)
	defer cancel()
	lk, err := s.lockStore(ctx)
	if err != nil {
		return err
	}
	defer lk.release()
	return s.txnSalvaging(ctx, fn)
}

// lockStore takes store.lock and sweeps what killed processes left behind
// when no sweep ran in the last minute (sweep.go).
func (s *Store) lockStore(ctx context.Context) (*fileLock, error) {
	lk, err := acquireLock(ctx, s.lockPath())
	if err != nil {
		return nil, err
	}
	s.sweepIfDue()
	return lk, nil
}

// ensure brings state.db in step with config.toml (and migrates a store of
// the one-file layout) under store.lock. Its sweep, when due, comes after:
// it then reads the key ids from the index just built, not from config.toml
// (which the rebuild parsed already).
func (s *Store) ensure(ctx context.Context) error {
	ctx, cancel := lockContext(ctx)
	defer cancel()
	lk, err := acquireLock(ctx, s.lockPath())
	if err != nil {
		return err
	}
	defer lk.release()
	err = s.txnSalvaging(ctx, func(*tx) error { return nil })
	s.sweepIfDue()
	return err
}

// txnSalvaging is a locked txn that sets a damaged state.db aside and runs
// again on a new one (caller holds store.lock).
func (s *Store) txnSalvaging(ctx context.Context, fn func(t *tx) error) error {
	err := s.txn(ctx, true, fn)
	var dmg *DamagedDBError
	if errors.As(err, &dmg) {
		if err := s.setAsideDB(dmg); err != nil {
			return err
		}
		err = s.txn(ctx, true, fn)
	}
	return err
}

// salvage sets a damaged state.db aside under store.lock; the caller then
// runs again, and the index is rebuilt.
func (s *Store) salvage(ctx context.Context, dmg *DamagedDBError) error {
	ctx, cancel := lockContext(ctx)
	defer cancel()
	lk, err := s.lockStore(ctx)
	if err != nil {
		return err
	}
	defer lk.release()
	return s.setAsideDB(dmg)
}

// txn is one read-write transaction. With locked (store.lock held) a stale
// index is rebuilt and a legacy store migrated in the same transaction, and
// fn may change config.toml: it is written before the transaction commits,
// so a crash in between leaves an index that the next process rebuilds.
func (s *Store) txn(ctx context.Context, locked bool, fn func(t *tx) error) error {
	fp, err := configFingerprint(s.configPath())
	if err != nil {
		return err
	}
	db, done, err := s.openDB(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	var migrated []string
	err = runGuarded(s.dbPath(), func() error {
		return db.Update(func(btx *bolt.Tx) error {
			t := &tx{s: s, btx: btx, locked: locked}
			if !t.fresh(fp) {
				if !locked {
					return errStale
				}
				var err error
				if migrated, err = t.freshen(fp); err != nil {
					return err
				}
			}
			if err := fn(t); err != nil {
				return err
			}
			return t.saveChangedConfig()
		})
	})
	if err != nil {
		return err
	}
	if len(migrated) > 0 {
		s.finishMigration(migrated)
	}
	return nil
}

// freshen brings a stale index up to config.toml of fingerprint fp (the
// caller holds store.lock): a legacy store migrated, the index rebuilt, or
// only the teams recorded. migrated names the legacy files moved.
func (t *tx) freshen(fp string) (migrated []string, err error) {
	if migrated, err = t.migrate(); err != nil {
		return nil, err
	}
	switch {
	case string(t.meta(metaConfig)) != fp || len(migrated) > 0:
		if err := t.reindex(fp); err != nil {
			return nil, err
		}
		if err := t.restoreStates(); err != nil {
			return nil, err
		}
	case !t.teamsFresh(fp):
		// An index that matches config.toml but lacks its teams (an
		// earlier release wrote it): the teams are recorded, the keys
		// stay (one parse of config.toml, not a rebuild).
		if _, err := t.config(); err != nil {
			return nil, err
		}
		if err := t.putConfigMeta(fp); err != nil {
			return nil, err
		}
	}
	return migrated, nil
}

// saveChangedConfig writes config.toml when the transaction changed it, and
// records its new fingerprint.
func (t *tx) saveChangedConfig() error {
	if !t.cfgDirty {
		return nil
	}
	if err := saveConfig(t.s.configPath(), t.cfg); err != nil {
		return err
	}
	fp, err := configFingerprint(t.s.configPath())
	if err != nil {
		return err
	}
	return t.putConfigMeta(fp)
}

// --- config changes -------------------------------------------------------------

// config parses config.toml for a change (caller holds store.lock).
func (t *tx) config() (*configFile, error) {
	if !t.locked {
		panic("store: config change without store.lock")
	}
	if t.cfg == nil {
		cfg, err := loadConfig(t.s.configPath())
		if err != nil {
			return nil, err
		}
		t.cfg = cfg
	}
	return t.cfg, nil
}

func (t *tx) putEntry(e keyEntry) error {
	entries, err := t.btx.CreateBucketIfNotExists(bucketEntries)
	if err != nil {
		return err
	}
	ids, err := t.btx.CreateBucketIfNotExists(bucketIDs)
	if err != nil {
		return err
	}
	if err := entries.Put([]byte(e.Label), encodeEntry(e)); err != nil {
		return err
	}
	return ids.Put([]byte(e.ID), []byte(e.Label))
}

// addKeys appends keys to config.toml and the index; the first key of a
// store becomes its default.
func (t *tx) addKeys(es ...keyEntry) error {
	cfg, err := t.config()
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := t.putEntry(e); err != nil {
			return err
		}
		cfg.Keys = append(cfg.Keys, e)
	}
	if len(es) > 0 && len(cfg.Keys) == len(es) {
		cfg.Default = es[0].Label
	}
	t.cfgDirty = true
	return nil
}

// recordEnvBackend writes the backend SHIPKEY_SECRETS chose into
// config.toml's secrets when config.toml names none (choiceFromEnv) and
// the key just added is the store's first: its secrets stay findable
// without the variable.
func (t *tx) recordEnvBackend() error {
	if !t.s.choiceFromEnv {
		return nil
	}
	cfg, err := t.config()
	if err != nil {
		return err
	}
	// Only with the store's first key: the keys made before were kept
	// where config.toml said, and must stay findable.
	if (cfg.Secrets == "" || cfg.Secrets == BackendAuto) && len(cfg.Keys) == 1 {
		cfg.Secrets = t.s.choice
		t.cfgDirty = true
	}
	return nil
}

func (t *tx) removeKey(id string) error {
	cfg, err := t.config()
	if err != nil {
		return err
	}
	i, ok := cfg.byID(id)
	if !ok {
		return nil
	}
	label := cfg.Keys[i].Label
	if cfg.Default == label {
		cfg.Default = ""
	}
	cfg.Keys = append(cfg.Keys[:i], cfg.Keys[i+1:]...)
	if b := t.bucket(bucketEntries); b != nil {
		if err := b.Delete([]byte(label)); err != nil {
			return err
		}
	}
	if b := t.bucket(bucketIDs); b != nil {
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
	}
	t.cfgDirty = true
	return nil
}

func (t *tx) renameKey(id, newLabel string) error {
	cfg, err := t.config()
	if err != nil {
		return err
	}
	i, ok := cfg.byID(id)
	if !ok {
		return nil
	}
	old := cfg.Keys[i].Label
	cfg.Keys[i].Label = newLabel
	if cfg.Default == old {
		cfg.Default = newLabel
	}
	if b := t.bucket(bucketEntries); b != nil {
		if err := b.Delete([]byte(old)); err != nil {
			return err
		}
	}
	t.cfgDirty = true
	return t.putEntry(cfg.Keys[i])
}

// changeEntry changes the definition of key id in config.toml and the
// index (its label stays).
func (t *tx) changeEntry(id string, fn func(*keyEntry)) error {
	cfg, err := t.config()
	if err != nil {
		return err
	}
	i, ok := cfg.byID(id)
	if !ok {
		return nil
	}
	label := cfg.Keys[i].Label
	fn(&cfg.Keys[i])
	cfg.Keys[i].Label = label
	t.cfgDirty = true
	return t.putEntry(cfg.Keys[i])
}

func (t *tx) setDefault(label string) error {
	if !t.locked {
		panic("store: config change without store.lock")
	}
	if t.cfg == nil && !t.cfgDirty {
		if done, err := t.setDefaultInPlace(label); done || err != nil {
			return err
		}
	}
	cfg, err := t.config()
	if err != nil {
		return err
	}
	cfg.Default = label
	t.cfgDirty = true
	return nil
}
