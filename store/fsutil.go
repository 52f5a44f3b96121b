package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/shipkey/shipkey/internal/text"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	// lockRetry is how often a waiting process tries a held lock again.
	lockRetry = 15 * time.Millisecond
	// defaultLockWait bounds the wait for store.lock when the caller gave no
	// context deadline: the lock is only ever held for a few file writes.
	defaultLockWait = 15 * time.Second
)

// ensureDir creates dir (and its parents) with mode 0700.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fileError("create", dir, err)
	}
	return nil
}

// writeFileAtomic replaces path with data: a temporary file in the same
// directory is written, synced and renamed over path, then the directory is
// synced. A crash at any point leaves either the old or the new file whole;
// the temporary file is removed on every error, and one left by a killed
// process is swept by the next holder of store.lock (sweepTemp).
func writeFileAtomic(path string, data []byte) error {
	if err := writeFileTemp(path, data, true); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeFileTemp is writeFileAtomic without the directory sync, and without
// the file sync unless sync (a batch syncs the file system once instead).
func writeFileTemp(path string, data []byte, sync bool) (err error) {
	dir := filepath.Dir(path)
	if err := ensureDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return fileError("write", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if err = tmp.Chmod(filePerm); err != nil {
		return fileError("write", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fileError("write", path, err)
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return fileError("write", path, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fileError("write", path, err)
	}
	if err = os.Rename(tmpName, path); err != nil {
		return fileError("write", path, err)
	}
	return nil
}

// tempPattern names the temporary files of shipkey's atomic writes:
// ".<name>.tmp-<random digits>" (sweepTemp knows them by it).
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// staleTemp is how old a temporary file must be before sweepTemp removes
// it: no write takes that long, so its process is gone.
const staleTemp = time.Minute

// isTempName reports whether name is one of shipkey's temporary files.
func isTempName(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(name, ".tmp-")
	if i < 2 {
		return false
	}
	digits := name[i+len(".tmp-"):]
	if digits == "" {
		return false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// sweepTemp removes shipkey's temporary files older than staleTemp from
// dirs: what a process killed in the middle of a write left behind. Some of
// them hold secrets (encrypted, or in clear for the plaintext backend).
func sweepTemp(dirs ...string) {
	cutoff := time.Now().Add(-staleTemp)
	for _, dir := range dirs {
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		for {
			names, err := f.Readdirnames(1024)
			for _, name := range names {
				if !isTempName(name) {
					continue
				}
				p := filepath.Join(dir, name)
				if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
					_ = os.Remove(p)
				}
			}
			if err != nil {
				break
			}
		}
		_ = f.Close()
	}
}

// keyFiles keeps one file per key: dir/<id><ext>.
type keyFiles struct{ dir, ext string }

// validID reports whether id can name a file: key ids are generated hex,
// but config.toml is hand-editable.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (f keyFiles) path(id string) string { return filepath.Join(f.dir, id+f.ext) }

func (f keyFiles) read(id string) ([]byte, bool, error) {
	if !validID(id) {
		return nil, false, nil
	}
	data, err := os.ReadFile(f.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fileError("read", f.path(id), err)
	}
	return data, true, nil
}

func (f keyFiles) write(id string, data []byte, sync bool) error {
	if !validID(id) {
		return text.Errorf("key id %q cannot name a file", text.Sanitize(id))
	}
	if err := writeFileTemp(f.path(id), data, sync); err != nil {
		return err
	}
	if sync {
		syncDir(f.dir)
	}
	return nil
}

// writeNew writes the file only if there is none yet (a newer one wins),
// reporting whether it did.
func (f keyFiles) writeNew(id string, data []byte) (bool, error) {
	if !validID(id) {
		return false, nil
	}
	if err := ensureDir(f.dir); err != nil {
		return false, err
	}
	return linkNew(f.path(id), data)
}

// writeMany writes one file per item and makes them durable together.
func (f keyFiles) writeMany(items map[string]keySecrets, encode func(keySecrets) ([]byte, error)) error {
	for id, ks := range items {
		data, err := encode(ks)
		if err != nil {
			return err
		}
		if !validID(id) {
			return text.Errorf("key id %q cannot name a file", text.Sanitize(id))
		}
		if err := writeFileTemp(f.path(id), data, !haveSyncFS); err != nil {
			return err
		}
	}
	if haveSyncFS {
		if err := syncFS(f.dir); err != nil {
			return fileError("sync", f.dir, err)
		}
	}
	syncDir(f.dir)
	return nil
}

// remove deletes a key's file; a missing one is not an error.
func (f keyFiles) remove(id string) error {
	if !validID(id) {
		return nil
	}
	if err := removeFile(f.path(id)); err != nil {
		return err
	}
	// The key's own temporary files a killed write left (they may hold its
	// secrets): gone with the key, not a minute later with the sweep.
	cutoff := time.Now().Add(-staleTemp)
	temps, _ := filepath.Glob(filepath.Join(f.dir, "."+id+f.ext+".tmp-*"))
	for _, p := range temps {
		if fi, err := os.Lstat(p); err == nil && isTempName(fi.Name()) && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			_ = os.Remove(p)
		}
	}
	syncDir(f.dir)
	return nil
}

// isTeamSecret reports whether a secret file's id is a team's member
// identity (TeamSecretID), not a key's: key ids are generated hex, so the
// "team-" prefix never names a key. A team identity is neither a key's
// secrets for the emptied-config check nor an orphan for the sweep.
func isTeamSecret(id string) bool { return strings.HasPrefix(id, "team-") }

// countSecretFiles counts the per-key files in dir (temporary files and team
// identities aside).
func countSecretFiles(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			if !strings.HasPrefix(name, ".") && !isTeamSecret(name) {
				n++
			}
		}
		if err != nil {
			return n
		}
	}
}

// syncDir flushes a directory entry change to disk where the platform allows.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync() // not supported everywhere (Windows); the rename is done either way
	_ = d.Close()
}

// removeFile deletes path; a missing file is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fileError("remove", path, err)
	}
	return nil
}

// fileError words a file system failure as "op path: reason".
func fileError(op, path string, err error) error { return text.FileError(op, path, err) }

// displayPath is p for messages: ~ for the home directory, sanitized.
func displayPath(p string) string { return text.Path(p) }

// inProcess serializes goroutines of this process on one lock path before
// they contend for the file lock itself, so that the wait is bounded by a
// context and does not depend on how the OS scopes file locks.
var inProcess sync.Map // path -> chan struct{} (capacity 1)

// fileLock is a held lock: both the in-process slot and the OS file lock.
type fileLock struct {
	slot chan struct{}
	fl   *flock.Flock
}

// acquireLock takes the exclusive lock on path (a file created 0600 in an
// existing or newly made 0700 directory), waiting until ctx is done. The lock
// is a real OS file lock, so it excludes other processes as well.
func acquireLock(ctx context.Context, path string) (*fileLock, error) {
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	v, _ := inProcess.LoadOrStore(path, make(chan struct{}, 1))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return nil, lockWaitError(path, ctx.Err())
	}
	fl := flock.New(path, flock.SetPermissions(filePerm))
	ok, err := fl.TryLockContext(ctx, lockRetry)
	if err != nil || !ok {
		<-slot
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, lockWaitError(path, ctx.Err())
		}
		return nil, fmt.Errorf("lock %s: %w", displayPath(path), err)
	}
	return &fileLock{slot: slot, fl: fl}, nil
}

func lockWaitError(path string, cause error) error {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	return fmt.Errorf("waiting for the lock %s: another shipkey process holds it: %w", displayPath(path), cause)
}

// release lets the next holder in.
func (l *fileLock) release() {
	if l == nil {
		return
	}
	_ = l.fl.Unlock()
	<-l.slot
}

// lockContext bounds a lock wait: ctx when it has a deadline, else
// defaultLockWait.
func lockContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultLockWait)
}

// createFileExclusive writes data to path only if path does not exist yet,
// atomically (hard link of a synced temporary file). It reports whether it
// created the file.
func createFileExclusive(path string, data []byte) (bool, error) {
	created, err := linkNew(path, data)
	if created {
		syncDir(filepath.Dir(path))
	}
	return created, err
}

// linkNew is createFileExclusive without the directory sync, for callers
// that write many files and sync their directory once.
func linkNew(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	if err := ensureDir(dir); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return false, fileError("write", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fileError("write", path, werr)
	}
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		// No hard links on this file system: fall back to a checked rename.
		if _, serr := os.Stat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(name, path); err != nil {
			return false, fileError("write", path, err)
		}
	}
	return true, nil
}
