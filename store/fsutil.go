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
// synced. A crash at any point leaves either the old or the new file whole.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := ensureDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
	if err = tmp.Sync(); err != nil {
		return fileError("write", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fileError("write", path, err)
	}
	if err = os.Rename(tmpName, path); err != nil {
		return fileError("write", path, err)
	}
	syncDir(dir)
	return nil
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

// fileError words a file system failure as "op path: reason" without the
// path appearing twice.
func fileError(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, displayPath(path), err)
}

// displayPath shortens the home directory to ~ for messages and sanitizes
// the rest (a directory name is untrusted text too).
func displayPath(p string) string {
	home, err := os.UserHomeDir()
	if err == nil && home != "" && home != "/" {
		if p == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return text.Safe("~" + string(filepath.Separator) + rest)
		}
	}
	return text.Safe(p)
}

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
