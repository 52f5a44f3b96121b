package store

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// A store that belongs to another user is refused up front, before anything
// is read or written: run as root on a user's store (sudo -E), shipkey would
// otherwise leave root-owned files that the user can no longer open, and a
// store shared across users would mix their secrets. Only shipkey's own
// directories and files are checked, never their parents.

// checkOwner refuses the store when one of its directories or main files
// is owned by a user other than the effective one.
func (s *Store) checkOwner() error {
	me, ok := effectiveUID()
	if !ok {
		return nil // no owners on this platform
	}
	paths := []string{
		s.configDir, s.configPath(), s.stateDir, s.dbPath(), s.lockPath(),
		filepath.Join(s.stateDir, secretsKeyFileName), filepath.Join(s.stateDir, keyringIDName),
	}
	paths = append(paths, s.secretDirs()...)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		uid, ok := ownerUID(fi)
		if !ok || uid == me {
			continue
		}
		return foreignError(p, uid, me)
	}
	// Root making a new store inside a user's directory (sudo -E with the
	// user's HOME) would leave root-owned directories there: refused too.
	if me == 0 {
		for _, dir := range []string{s.configDir, s.stateDir} {
			p := nearestExisting(dir)
			if fi, err := os.Lstat(p); err == nil && p != dir {
				if uid, ok := ownerUID(fi); ok && uid != 0 {
					return foreignError(p, uid, me)
				}
			}
		}
	}
	return nil
}

func foreignError(p string, owner, me uint32) error {
	return fmt.Errorf("%s belongs to %s, not to %s: run shipkey as %s (nothing was read or changed)",
		displayPath(p), userName(owner), userName(me), userName(owner))
}

// nearestExisting is dir, or its closest ancestor that exists.
func nearestExisting(dir string) string {
	for {
		if _, err := os.Lstat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// userName is "alice (uid 1000)", or "uid 1000" when the name is unknown.
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}
