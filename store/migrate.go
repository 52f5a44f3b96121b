package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Migration from the one-file layout of shipkey before state.db: state.json
// (every key's metadata), secrets.age (every key's secrets, encrypted to the
// identity in secrets.key.age) or secrets.json (plaintext). It happens on
// first use, under store.lock:
//
//   - state.json goes into state.db in the transaction that builds the
//     index; it is removed only after that transaction committed (a crash
//     in between leaves a state.json that is no longer read).
//   - secrets.json and secrets.age are split into one file per key, each
//     created only when no newer per-key file exists (a crash midway is
//     resumed), then removed. secrets.age needs the identity, so it moves
//     when the file backend is first unlocked, never on a `keys list`.
//
// Each step is said once on the warning writer.

// migrate moves state.json into state.db (caller holds store.lock) and
// returns the files to remove once the transaction has committed.
func (t *tx) migrate() (remove []string, err error) {
	path := legacyStatePath(t.s.stateDir)
	if string(t.meta(metaVersion)) == dbVersion {
		return nil, nil
	}
	st, found, err := loadLegacyState(path)
	if err != nil {
		return nil, err
	}
	if found {
		t.migratingFrom = path
		for id, ks := range st.Keys {
			if err := t.putState(id, ks); err != nil {
				return nil, err
			}
		}
		remove = append(remove, path)
	}
	meta, err := t.btx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return nil, err
	}
	if err := meta.Put(metaVersion, []byte(dbVersion)); err != nil {
		return nil, err
	}
	return remove, nil
}

// legacyMigrator is a backend that may find secrets in the one-file layout.
// migrateLegacy moves them into per-key files, removes the old file and
// says which it was (""when there was none). The caller holds store.lock.
type legacyMigrator interface {
	migrateLegacy() (string, error)
	legacyPath() string
}

// finishMigration removes the migrated legacy files and says what moved.
func (s *Store) finishMigration(remove []string) {
	var moved []string
	for _, p := range remove {
		if err := removeFile(p); err == nil {
			moved = append(moved, filepath.Base(p))
		}
	}
	s.sayMigrated(moved...)
}

// migrationSaid remembers, per state directory, that the migration was said.
var migrationSaid sync.Map

func (s *Store) sayMigrated(moved ...string) {
	if len(moved) == 0 {
		return
	}
	if _, done := migrationSaid.LoadOrStore(s.stateDir+"\x00"+strings.Join(moved, ","), true); done {
		return
	}
	fmt.Fprintf(s.warn, "shipkey: upgraded the store in %s to one record per key: %s moved into %s\n",
		displayPath(s.stateDir), strings.Join(moved, " and "), "state.db, secrets.d/ and plaintext.d/")
}

// migrateSecrets moves the legacy secrets file of b, if any, into per-key
// files under store.lock. The file backend must be unlocked first (no lock
// is held across a prompt).
func (s *Store) migrateSecrets(ctx context.Context, b secretsBackend) error {
	lm, ok := b.(legacyMigrator)
	if !ok || !fileExists(lm.legacyPath()) {
		return nil
	}
	ctx, cancel := lockContext(ctx)
	defer cancel()
	lk, err := s.lockStore(ctx)
	if err != nil {
		return err
	}
	defer lk.release()
	moved, err := lm.migrateLegacy()
	if err != nil {
		return err
	}
	if moved != "" {
		s.sayMigrated(moved)
	}
	return nil
}

// hasLegacyFiles reports whether the state directory holds a store of the
// one-file layout.
func (s *Store) hasLegacyFiles() bool {
	if fileExists(legacyStatePath(s.stateDir)) {
		return true
	}
	for _, b := range s.backends {
		if lm, ok := b.(legacyMigrator); ok && fileExists(lm.legacyPath()) {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}
