package team

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/auth"
)

// Cache is a machine's local copy of a team, encrypted to its own member
// identity (StateDir/teams/T/cache.age): what `token` hands out without
// etcd, and while etcd is down. Engines write it; CachedFast reads it.
type Cache struct {
	Keys     map[string]*CacheEntry `json:"keys"` // by key id
	SyncedAt time.Time              `json:"synced_at"`
	// Removed: etcd's roster no longer holds this machine (its tokens are
	// dropped; the keys stay listed as removed).
	Removed bool `json:"removed,omitempty"`
}

// CacheEntry is one key in the cache: its definition and the team's token
// set at the storage revision it was read at.
type CacheEntry struct {
	Def      Definition     `json:"def"`
	Token    *auth.TokenSet `json:"token,omitempty"`
	TokenRev int64          `json:"token_rev,omitempty"`
}

// ByLabel is the entry of the key labelled label, nil when none.
func (c *Cache) ByLabel(label string) *CacheEntry {
	for _, e := range c.Keys {
		if e.Def.Label == label {
			return e
		}
	}
	return nil
}

// StateDir is where a team's local state lives (cache, pinned roster,
// locks) under a store's state directory.
func StateDir(storeState, team string) string { return filepath.Join(storeState, "teams", team) }

// CacheFileName is the cache's file in StateDir.
const CacheFileName = "cache.age"

// errDamagedCache: the cache did not decrypt or parse.
var errDamagedCache = errors.New("the local cache is damaged")

// ReadCache reads and decrypts the cache at path with id. A missing file is
// an empty cache; a damaged one is errDamagedCache (it is only a copy).
// A cached token that fails a server answer's checks is dropped.
func ReadCache(path string, id age.Identity) (*Cache, error) {
	c := &Cache{Keys: map[string]*CacheEntry{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, nil
	}
	r, err := age.Decrypt(bytes.NewReader(data), id)
	if err != nil {
		return c, errDamagedCache
	}
	plain, err := io.ReadAll(r)
	if err != nil || json.Unmarshal(plain, c) != nil {
		return &Cache{Keys: map[string]*CacheEntry{}}, errDamagedCache
	}
	if c.Keys == nil {
		c.Keys = map[string]*CacheEntry{}
	}
	for _, e := range c.Keys {
		if e.Token != nil && e.Token.CheckStored() != nil {
			e.Token, e.TokenRev = nil, 0
		}
	}
	return c, nil
}

// Prefix is a team's prefix in the storage; TokenKey its key's token set.
func Prefix(team string) string       { return "/shipkey/teams/" + team + "/" }
func TokenKey(team, id string) string { return Prefix(team) + "tokens/" + id }

// UnreachableFileName marks, in StateDir, when the storage last failed to
// answer this machine.
const UnreachableFileName = "unreachable"
