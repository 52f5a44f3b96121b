package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"
	"github.com/gofrs/flock"

	"github.com/shipkey/shipkey/store/team"
)

// The cache's format is package team's (team.Cache), so that a program
// without this engine can read it (team.CachedFast).
type (
	cacheFile  = team.Cache
	cacheEntry = team.CacheEntry
)

// markRemoved notes in the cache that this machine is no member now.
func (h *handle) markRemoved(ctx context.Context) {
	_ = h.updateCache(ctx, func(c *cacheFile) {
		c.Removed = true
		for _, e := range c.Keys {
			e.Token, e.TokenRev = nil, 0
		}
	})
}

func (h *handle) dir() string { return team.StateDir(h.e.opts.Store.StateDir(), h.name()) }

func (h *handle) cachePath() string { return filepath.Join(h.dir(), team.CacheFileName) }

// readCache reads the local cache; a missing one is empty, a damaged one is
// said once and treated as empty (it is only a copy of etcd).
func (h *handle) readCache() *cacheFile {
	c, err := team.ReadCache(h.cachePath(), h.id)
	if err != nil {
		fmt.Fprintf(h.e.opts.Warn, "shipkey: warning: team %s: the local cache is damaged; it is rebuilt from etcd\n", h.name())
	}
	return c
}

// updateCache applies fn to the cache under the cache lock and writes it
// atomically (temporary file, fsync, rename): a kill leaves the old or the
// new cache, never half of one.
func (h *handle) updateCache(ctx context.Context, fn func(c *cacheFile)) error {
	unlock, err := h.lockFile(ctx, "cache.lock")
	if err != nil {
		return err
	}
	defer unlock()
	// Under the lock every temporary file is a killed writer's: sweep them.
	if olds, _ := filepath.Glob(filepath.Join(h.dir(), ".cache.age.tmp-*")); len(olds) > 0 {
		for _, o := range olds {
			_ = os.Remove(o)
		}
	}
	c := h.readCache()
	fn(c)
	plain, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ct, err := seal(plain, []age.Recipient{h.id.Recipient()})
	if err != nil {
		return err
	}
	return writeAtomic(h.cachePath(), ct)
}

// lockFile takes an OS file lock in the team's state directory, bounded by
// the team's timeout.
func (h *handle) lockFile(ctx context.Context, name string) (func(), error) {
	if err := os.MkdirAll(h.dir(), 0o700); err != nil {
		return nil, err
	}
	fl := flock.New(filepath.Join(h.dir(), name), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(ctx, 4*h.timeout)
	defer cancel()
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("team %s: waiting for the lock %s: another shipkey process holds it", h.name(), name)
	}
	return func() { _ = fl.Unlock() }, nil
}

func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
