package team

import (
	"context"
	"errors"
	"time"
)

// Driver is the storage a team lives in, as the team protocol (package
// team/engine) uses it: a key-value store with a revision that grows with
// every write, reads of one revision, writes that compare revisions, a
// watch from a revision and a lease-backed lock. Keys are whole paths
// (Prefix(team)+"roster", …). Package etcdteam is the driver on etcd; a
// second one (Vault/OpenBao KV, Consul) implements this interface and passes
// drivertest.Conformance, and nothing of the protocol changes.
//
// Every method is bounded by its context. An error that means the storage
// did not answer in time (unreachable, no quorum, ctx ended) wraps
// ErrUnavailable; the protocol retries or hands out a cached token on it.
type Driver interface {
	// Get reads keys at one revision: one result per key, nil where a key
	// does not exist, and that revision.
	Get(ctx context.Context, keys ...string) ([]*KV, int64, error)
	// List reads every key under prefix at one revision, in key order.
	List(ctx context.Context, prefix string) ([]KV, int64, error)
	// Commit applies ops atomically if every condition holds, and returns
	// whether it did and the revision after it (the revision of every key
	// it wrote). ops may not touch a key twice. A Commit without ops is a
	// read and may be answered from a member that is behind (etcd 3.4 did
	// so): the protocol never relies on one.
	Commit(ctx context.Context, conds []Cond, ops []Op) (bool, int64, error)
	// Watch sends the writes under prefix from revision from on (0: from
	// now), a batch at a time, until ctx ends or the watch breaks; then it
	// closes the channel. A batch with Compacted set says revision from is
	// no longer kept: read again and watch from there.
	Watch(ctx context.Context, prefix string, from int64) <-chan WatchBatch
	// Lock takes the exclusive lock name (a key prefix of its own), held
	// on a lease of ttl: a holder that dies frees it within ttl; one that
	// lives keeps it until Unlock. It waits, bounded by ctx, while another
	// holds it.
	Lock(ctx context.Context, name string, ttl time.Duration) (Lock, error)
	// Close releases the connection.
	Close() error
}

// Lock is a lock a Driver granted.
type Lock interface {
	// Held is the condition that this lock is still held (its lease did
	// not run out, nobody broke it), for a Commit.
	Held() Cond
	// Unlock releases it (best effort, bounded).
	Unlock()
}

// KV is one key as stored: Rev is the revision that last wrote it.
type KV struct {
	Key   string
	Value []byte
	Rev   int64
}

// CondKind is what a Cond compares.
type CondKind int

const (
	// RevIs: Key was last written at Rev (0: Key does not exist).
	RevIs CondKind = iota
	// Exists: Key exists.
	Exists
	// NotAfter: Key (with Prefix, every key under it) was last written at
	// Rev or before; a key that does not exist satisfies it.
	NotAfter
	// Held: the lock whose own key is Key, granted at revision Rev, is
	// still held (only Lock.Held makes one).
	Held
)

// Cond is a condition of Commit.
type Cond struct {
	Kind   CondKind
	Key    string
	Prefix bool // NotAfter only
	Rev    int64
}

// RevIsCond is "key was last written at rev" (0: it does not exist).
func RevIsCond(key string, rev int64) Cond { return Cond{Kind: RevIs, Key: key, Rev: rev} }

// Op is one write of a Commit: a put of Value, or a delete.
type Op struct {
	Key    string
	Value  []byte
	Delete bool
}

// Put is an Op that writes value at key.
func Put(key string, value []byte) Op { return Op{Key: key, Value: value} }

// Delete is an Op that deletes key.
func Delete(key string) Op { return Op{Key: key, Delete: true} }

// WatchBatch is what one notification of Watch carries: the keys written
// (put or deleted) and the revision of each.
type WatchBatch struct {
	Keys      []string
	Revs      []int64
	Compacted bool
}

// FormerReader is a Driver that keeps a key's earlier values (etcd's
// multi-version store, until a compaction): the protocol reads what the
// roster key held before a write it did not expect (a roster written back
// over a removal). A driver without it, or a revision compacted away,
// leaves a machine without that evidence, and it refuses what it cannot
// tell apart (docs/teams.md, "Threat model").
type FormerReader interface {
	// GetAt reads key as it was at revision rev: nil when it did not exist
	// then. It fails with ErrCompacted when rev is no longer kept.
	GetAt(ctx context.Context, key string, rev int64) (*KV, error)
}

// ErrCompacted: the storage no longer keeps the revision asked for.
var ErrCompacted = errors.New("revision compacted")
