package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Stamp identifies the store's content at a moment: two equal stamps mean no
// shipkey process changed a key, its label, its tokens or its Last Used in
// between. It is config.toml's fingerprint, the id of state.db's last
// transaction (every write of any kind commits one) and the sequence of its
// last change of a key's state (changes.go), so it costs a stat and the
// read of a meta page whatever the number of keys: the app compares stamps
// on every tick to see what other shipkey processes changed, and asks
// which keys changed since its stamp (ChangesSince).
type Stamp string

// stampSettle is how old a file's mtime must be before its stat alone is
// trusted to show a change: a write within the same mtime tick (coarse
// file systems) keeps size and mtime, so a file changed this recently is
// read again, as git does with "racily clean" entries.
const stampSettle = 2 * time.Second

// stampCache is the last stamp and the stat of config.toml and state.db it
// was read with.
type stampCache struct {
	mu       sync.Mutex
	cfg, db  string
	stamp    Stamp
	computed bool
}

// statKey identifies the file at path by its stat ("-" when missing); ok
// is false when it changed too recently for the stat to be trusted.
func statKey(path string) (key string, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "-", errors.Is(err, os.ErrNotExist)
	}
	key = fmt.Sprint(fileIdentity(fi), ":", fi.Size(), ":", fi.ModTime().UnixNano())
	return key, time.Since(fi.ModTime()) > stampSettle
}

// Stamp returns the store's current stamp. While neither config.toml nor
// state.db changed its stat (inode, size, mtime) it is the last stamp read:
// two stat calls; otherwise both are read again.
func (s *Store) Stamp() (Stamp, error) {
	cfgKey, cfgOK := statKey(s.configPath())
	dbKey, dbOK := statKey(s.dbPath())
	c := &s.stampCache
	c.mu.Lock()
	if cfgOK && dbOK && c.computed && c.cfg == cfgKey && c.db == dbKey {
		st := c.stamp
		c.mu.Unlock()
		return st, nil
	}
	c.mu.Unlock()
	st, err := s.readStamp()
	if err == nil {
		c.mu.Lock()
		c.cfg, c.db, c.stamp, c.computed = cfgKey, dbKey, st, true
		c.mu.Unlock()
	}
	return st, err
}

// readStamp reads the stamp from config.toml and state.db.
func (s *Store) readStamp() (Stamp, error) {
	if r := s.hold.use(); r != nil {
		// What this process read once (readonce.go): no writer since.
		defer s.hold.done(r)
		b := append([]byte(r.fp), ';')
		err := r.db.View(func(tx *bolt.Tx) error {
			b = appendTxStamp(b, tx)
			return nil
		})
		return Stamp(b), err
	}
	fp, err := configFingerprint(s.configPath())
	if err != nil {
		return "", err
	}
	b := append([]byte(fp), ';')
	db, done, err := s.openDB(context.Background(), false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b = append(b, "-;0"...)
	case err != nil:
		return "", err
	default:
		err = db.View(func(tx *bolt.Tx) error {
			b = appendTxStamp(b, tx)
			return nil
		})
		done()
		if err != nil {
			return "", err
		}
	}
	return Stamp(b), nil
}

// appendTxStamp appends state.db's part of a stamp: the id of its last
// transaction and the sequence of its last change (changes.go).
func appendTxStamp(b []byte, tx *bolt.Tx) []byte {
	b = strconv.AppendInt(b, int64(tx.ID()), 10)
	b = append(b, ';')
	return strconv.AppendUint(b, changeSeq(tx), 10)
}

// StampFiles are the files whose stat the stamp follows (config.toml and
// state.db): a watcher of their directories that sees one of them change
// knows the stamp may have.
func (s *Store) StampFiles() []string { return []string{s.configPath(), s.dbPath()} }

// IndexBytes is the size of state.db (0 when there is none): what listing
// the keys costs grows with it (about 1 KB and 3 µs a key).
func (s *Store) IndexBytes() int64 {
	fi, err := os.Stat(s.dbPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}
