package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	bolt "go.etcd.io/bbolt"
)

// What killed processes leave behind is swept at most once a minute
// (staleTemp) store-wide, by the first holder of store.lock (the commands
// that change config.toml, and the index's rebuild) or `serve` (Sweep, when
// the lock is free) that finds the last sweep older: a stamp file in the
// state directory (.swept) says when it was, a stat that costs the same
// whatever the number of keys. What is swept: temporary files of atomic
// writes, and secret files of keys that config.toml does not hold (a `keys
// new` killed after it wrote the secrets and before config.toml, a `keys
// rm` killed in between). Both only once they are older than staleTemp. A
// sweep reads the key ids (from the index when it matches config.toml) and
// the secret folders, so its cost grows with the number of keys (at
// 100,000 keys about 0.3 s of CPU): `shipkey token`, which scripts call in
// loops, never sweeps, and costs the same at 100,000 keys as at one; a
// command that changes a key pays it once a minute at most. A team's member
// identity (TeamSecretID) is never swept: it is no key's, and without it
// every team key of the machine is lost.

const sweepStampName = ".swept"

// sweepNow is the clock of the sweep's stamp.
func (s *Store) sweepNow() time.Time {
	if s.hooks.sweepNow != nil {
		return s.hooks.sweepNow()
	}
	return time.Now()
}

// sweepDue reports whether the last sweep is older than staleTemp (or in
// the future: a clock set back).
func (s *Store) sweepDue() bool {
	fi, err := os.Stat(filepath.Join(s.stateDir, sweepStampName))
	if err != nil {
		return true
	}
	now := s.sweepNow()
	return fi.ModTime().Before(now.Add(-staleTemp)) || fi.ModTime().After(now.Add(staleTemp))
}

// sweepIfDue sweeps when no sweep ran in the last minute (caller holds
// store.lock).
func (s *Store) sweepIfDue() {
	if s.sweepDue() {
		s.sweep()
	}
}

// sweep removes stale temporary files and orphaned secret files (caller
// holds store.lock).
func (s *Store) sweep() {
	stamp := filepath.Join(s.stateDir, sweepStampName)
	if f, err := os.OpenFile(stamp, os.O_CREATE|os.O_WRONLY, filePerm); err == nil {
		_ = f.Close()
		now := s.sweepNow()
		_ = os.Chtimes(stamp, now, now)
	}
	sweepTemp(append([]string{s.configDir, s.stateDir}, s.secretDirs()...)...)
	s.sweepOrphans()
	s.sweepRemoved()
}

// sweepRemoved deletes the secrets of the keys a killed `keys rm` removed
// from config.toml and not from their backend (markRemoved) in the backends
// that cannot be listed (the keyring): exactly those ids, and their state. A record is
// dropped once its backend deleted the secrets; one it could not (a locked
// or missing backend) stays for the next sweep.
func (s *Store) sweepRemoved() {
	if _, err := os.Stat(s.dbPath()); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	db, done, err := s.openDB(ctx, true)
	if err != nil {
		return
	}
	defer done()
	removed := map[string]string{}
	_ = runGuarded(s.dbPath(), func() error {
		return db.View(func(btx *bolt.Tx) error {
			if b := btx.Bucket(bucketRemoved); b != nil {
				return b.ForEach(func(k, v []byte) error {
					removed[string(k)] = string(v)
					return nil
				})
			}
			return nil
		})
	})
	var deleted [][]byte
	for id, name := range removed {
		b, ok := s.backends[name]
		if !ok || !validID(id) || isTeamSecret(id) {
			continue
		}
		// A backend of files is sweepOrphans' (which waits staleTemp, and
		// never migrates the one-file layout, which may need a passphrase);
		// the keyring's files are too, but only its Delete finds an entry
		// of its old layout (one per key).
		_, files := b.(interface{ files() keyFiles })
		if files && name != BackendKeyring || b.Delete(id) == nil {
			deleted = append(deleted, []byte(id))
		}
	}
	if len(deleted) == 0 {
		return
	}
	_ = runGuarded(s.dbPath(), func() error {
		return db.Update(func(btx *bolt.Tx) error {
			b := btx.Bucket(bucketRemoved)
			for _, id := range deleted {
				if b != nil {
					_ = b.Delete(id)
				}
				if st := btx.Bucket(bucketState); st != nil {
					_ = st.Delete(id)
				}
			}
			return nil
		})
	})
}

// sweepOrphans removes the secret files, older than staleTemp, of key ids
// that config.toml does not hold: those of the index when it matches
// config.toml (indexedIDs), else of config.toml parsed. A config.toml that does not parse, is
// missing, or holds no key and is not the one shipkey last wrote (state.db's
// index records its fingerprint) sweeps nothing: it may be damaged, and the
// secrets are then the only copy (see tx.integrity). A keyless config.toml
// shipkey wrote itself (the last key removed, the `keys rm` killed before
// its secrets went) sweeps like any other.
func (s *Store) sweepOrphans() {
	ids, ok := s.heldIDs()
	if !ok {
		return
	}
	cutoff := time.Now().Add(-staleTemp)
	for _, row := range backendTable {
		if f, ok := s.backends[row.name].(interface{ files() keyFiles }); ok {
			sweepKeyFiles(f.files(), ids, cutoff)
		}
	}
}

// heldIDs are the ids of the keys config.toml holds, from the index when it
// matches config.toml, else from config.toml parsed; false when there is
// nothing to sweep against (see sweepOrphans).
func (s *Store) heldIDs() (map[string]bool, bool) {
	fp, err := configFingerprint(s.configPath())
	if err != nil || fp == fpAbsent {
		return nil, false
	}
	if ids, indexed := s.indexedIDs(fp); indexed {
		return ids, true
	}
	cfg, err := loadConfig(s.configPath())
	if err != nil || len(cfg.Keys) == 0 {
		return nil, false
	}
	ids := make(map[string]bool, len(cfg.Keys))
	for _, e := range cfg.Keys {
		ids[e.ID] = true
	}
	return ids, true
}

// sweepKeyFiles removes the secret files in kf, older than cutoff, of key
// ids that ids does not hold (team secrets and hidden files are left).
func sweepKeyFiles(kf keyFiles, ids map[string]bool, cutoff time.Time) {
	d, err := os.Open(kf.dir)
	if err != nil {
		return
	}
	var gone []string
	for {
		names, err := d.Readdirnames(1024)
		for _, name := range names {
			if p, ok := orphanFile(kf, name, ids, cutoff); ok {
				gone = append(gone, p)
			}
		}
		if err != nil {
			break
		}
	}
	_ = d.Close()
	for _, p := range gone {
		_ = os.Remove(p)
	}
	if len(gone) > 0 {
		syncDir(kf.dir)
	}
}

// orphanFile reports whether name, in kf, is a regular secret file older
// than cutoff of a key id that ids does not hold, and its path.
func orphanFile(kf keyFiles, name string, ids map[string]bool, cutoff time.Time) (string, bool) {
	id, ok := strings.CutSuffix(name, kf.ext)
	if !ok || strings.HasPrefix(name, ".") || ids[id] || !validID(id) || isTeamSecret(id) {
		return "", false
	}
	p := filepath.Join(kf.dir, name)
	fi, err := os.Lstat(p)
	return p, err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff)
}

// indexedIDs returns the ids of the keys of state.db's index when it was
// built from, or written with, the config.toml of fingerprint fp: those of
// config.toml, without parsing it (a cursor walk, where parsing a
// config.toml of 100,000 keys takes seconds). Any doubt (no state.db, one
// that does not open or is busy, an index of another config.toml) is not
// indexed.
func (s *Store) indexedIDs(fp string) (ids map[string]bool, indexed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	db, done, err := s.openDB(ctx, false)
	if err != nil {
		return nil, false
	}
	defer done()
	err = runGuarded(s.dbPath(), func() error {
		return db.View(func(btx *bolt.Tx) error {
			t := &tx{s: s, btx: btx}
			if !t.fresh(fp) {
				return errStale
			}
			ids = map[string]bool{}
			b := t.bucket(bucketIDs)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, _ []byte) error {
				ids[string(k)] = true
				return nil
			})
		})
	})
	return ids, err == nil
}

// SweepEvery is how often a long-running holder of the store (serve)
// calls Sweep.
const SweepEvery = staleTemp

// Sweep removes what killed processes left behind (stale temporary files,
// secret files of keys config.toml does not hold) when a sweep is due
// (none in the last SweepEvery) and store.lock is free right now; it never
// waits. Its cost grows with the number of keys: for long-running
// processes (serve), not for a command a script calls in a loop.
func (s *Store) Sweep() {
	if !s.sweepDue() {
		return
	}
	path := s.lockPath()
	v, _ := inProcess.LoadOrStore(path, make(chan struct{}, 1))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
	default:
		return
	}
	defer func() { <-slot }()
	fl := flock.New(path, flock.SetPermissions(filePerm))
	if ok, err := fl.TryLock(); err != nil || !ok {
		return
	}
	defer func() { _ = fl.Unlock() }()
	s.sweep()
}
