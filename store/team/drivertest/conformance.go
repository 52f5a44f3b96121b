// Package drivertest holds what every team storage driver (team.Driver)
// must do, as tests: Conformance, run by each driver's own tests (etcdteam's
// on a real etcd), and Memory, a driver in memory that passes it, for tests
// that show the protocol needs nothing more than the interface. No program
// uses Memory.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/team"
)

// checks are the parts of team.Driver's contract, one named behaviour each.
// Each runs as its own subtest under a key prefix of its own, so that it
// needs nothing another wrote.
var checks = []struct {
	name string
	run  func(c conformance)
}{
	{"missing key and create-if-absent", checkCreate},
	{"put if revision", checkPutIfRevision},
	{"not after", checkNotAfter},
	{"list", checkList},
	{"former values", checkFormer},
	{"watch", checkWatch},
	{"lock", checkLock},
	{"ended context", checkEndedContext},
}

// Conformance checks d against team.Driver's contract. Every key it writes
// is under prefix, which must be empty; d is not closed.
func Conformance(t *testing.T, d team.Driver, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			ch.run(conformance{t: t, ctx: ctx, d: d, prefix: prefix + ch.name + "/"})
		})
	}
}

// conformance is one check's driver, context and key prefix.
type conformance struct {
	t      *testing.T
	ctx    context.Context
	d      team.Driver
	prefix string
}

// k is the key s under the check's prefix.
func (c conformance) k(s string) string { return c.prefix + s }

// commit commits ops under conds; an error ends the test.
func (c conformance) commit(conds []team.Cond, ops ...team.Op) (bool, int64) {
	c.t.Helper()
	ok, rev, err := c.d.Commit(c.ctx, conds, ops)
	if err != nil {
		c.t.Fatalf("Commit: %v", err)
	}
	return ok, rev
}

// get reads keys, one result each; an error ends the test.
func (c conformance) get(keys ...string) []*team.KV {
	c.t.Helper()
	kvs, _, err := c.d.Get(c.ctx, keys...)
	if err != nil || len(kvs) != len(keys) {
		c.t.Fatalf("Get(%v): %d results, %v", keys, len(kvs), err)
	}
	return kvs
}

// seed creates a (value 1) and dir/x if a is absent, at one revision, which
// it returns.
func (c conformance) seed() int64 {
	c.t.Helper()
	ok, r1 := c.commit([]team.Cond{team.RevIsCond(c.k("a"), 0)}, team.Put(c.k("a"), []byte("1")), team.Put(c.k("dir/x"), []byte("x")))
	if !ok || r1 <= 0 {
		c.t.Fatalf("create-if-absent: ok %v rev %d", ok, r1)
	}
	return r1
}

// putA puts a's second value (2) at a's revision r1, and returns the new
// revision.
func (c conformance) putA(r1 int64) int64 {
	c.t.Helper()
	ok, r2 := c.commit([]team.Cond{team.RevIsCond(c.k("a"), r1), {Kind: team.Exists, Key: c.k("dir/x")}}, team.Put(c.k("a"), []byte("2")))
	if !ok || r2 <= r1 {
		c.t.Fatalf("put at the right revision: ok %v rev %d after %d", ok, r2, r1)
	}
	return r2
}

// checkCreate: a key that does not exist is nil, and revision 0 compares
// equal to it; what one commit wrote carries its revision.
func checkCreate(c conformance) {
	if kvs := c.get(c.k("a")); kvs[0] != nil {
		c.t.Fatalf("Get of a missing key: %+v", kvs[0])
	}
	r1 := c.seed()
	kvs := c.get(c.k("a"), c.k("dir/x"), c.k("b"))
	if kvs[0] == nil || string(kvs[0].Value) != "1" || kvs[0].Rev != r1 || kvs[0].Key != c.k("a") || kvs[1] == nil || kvs[1].Rev != r1 || kvs[2] != nil {
		c.t.Fatalf("Get after the commit at %d: %+v %+v %+v", r1, kvs[0], kvs[1], kvs[2])
	}
}

// checkPutIfRevision: a stale revision fails and writes nothing; the right
// one succeeds at a later revision; Exists fails for a missing key.
func checkPutIfRevision(c conformance) {
	r1 := c.seed()
	if ok, _ := c.commit([]team.Cond{team.RevIsCond(c.k("a"), 0)}, team.Put(c.k("a"), []byte("2"))); ok {
		c.t.Fatal("create-if-absent succeeded on an existing key")
	}
	if ok, _ := c.commit([]team.Cond{team.RevIsCond(c.k("a"), r1+1000)}, team.Put(c.k("a"), []byte("2")), team.Put(c.k("c"), []byte("c"))); ok {
		c.t.Fatal("a put at a wrong revision succeeded")
	}
	if kvs := c.get(c.k("a"), c.k("c")); string(kvs[0].Value) != "1" || kvs[1] != nil {
		c.t.Fatal("a failed commit wrote something")
	}
	c.putA(r1)
	if ok, _ := c.commit([]team.Cond{{Kind: team.Exists, Key: c.k("nothing")}}, team.Put(c.k("c"), []byte("c"))); ok {
		c.t.Fatal("Exists held for a missing key")
	}
}

// checkNotAfter: NotAfter, on a key and on a prefix.
func checkNotAfter(c conformance) {
	r1 := c.seed()
	r2 := c.putA(r1)
	if ok, _ := c.commit([]team.Cond{{Kind: team.NotAfter, Key: c.k("a"), Rev: r1}}, team.Put(c.k("c"), []byte("c"))); ok {
		c.t.Fatal("NotAfter held for a key written after the revision")
	}
	if ok, _ := c.commit([]team.Cond{{Kind: team.NotAfter, Key: c.k("dir/"), Prefix: true, Rev: r1}, {Kind: team.NotAfter, Key: c.k("none/"), Prefix: true, Rev: 1}, {Kind: team.NotAfter, Key: c.k("a"), Rev: r2}}); !ok {
		c.t.Fatal("NotAfter failed for keys written at or before the revision")
	}
	if ok, _ := c.commit([]team.Cond{{Kind: team.NotAfter, Key: c.k(""), Prefix: true, Rev: r1}}); ok {
		c.t.Fatal("NotAfter on the prefix held though a key under it was written after")
	}
}

// checkList: every key under the prefix, in order, at one revision; a
// deleted key is gone.
func checkList(c conformance) {
	c.seed()
	_, r3 := c.commit(nil, team.Put(c.k("dir/y"), []byte("y")), team.Delete(c.k("a")))
	list, lrev, err := c.d.List(c.ctx, c.k("dir/"))
	if err != nil || len(list) != 2 || list[0].Key != c.k("dir/x") || list[1].Key != c.k("dir/y") || list[1].Rev != r3 || lrev < r3 {
		c.t.Fatalf("List: %+v at %d, %v", list, lrev, err)
	}
	if kvs := c.get(c.k("a")); kvs[0] != nil {
		c.t.Fatal("a deleted key is still there")
	}
}

// checkFormer: a driver that keeps earlier values (team.FormerReader) gives
// a key as it was at a revision: a's first value at r1, its second at r2,
// and nothing before it existed. A driver that keeps none has nothing to
// check.
func checkFormer(c conformance) {
	fr, ok := c.d.(team.FormerReader)
	if !ok {
		return
	}
	r1 := c.seed()
	r2 := c.putA(r1)
	_, r3 := c.commit(nil, team.Put(c.k("dir/y"), []byte("y")), team.Delete(c.k("a")))
	for _, tc := range []struct {
		at   int64
		want string
	}{{r1, "1"}, {r2, "2"}, {r3 - 1, "2"}, {r1 - 1, ""}} {
		kv, err := fr.GetAt(c.ctx, c.k("a"), tc.at)
		switch {
		case err != nil:
			c.t.Fatalf("GetAt(a, %d): %v", tc.at, err)
		case tc.want == "" && kv != nil, tc.want != "" && (kv == nil || string(kv.Value) != tc.want):
			c.t.Fatalf("GetAt(a, %d) = %+v, want %q", tc.at, kv, tc.want)
		}
	}
	if kv, err := fr.GetAt(c.ctx, c.k("a"), r2); err != nil || kv.Rev != r2 {
		c.t.Fatalf("GetAt(a, %d): the revision %+v, %v", r2, kv, err)
	}
}

// checkWatch: a watch from a revision sees that revision's writes and later
// ones, deletes included, with their revisions, and closes when its context
// ends.
func checkWatch(c conformance) {
	c.seed()
	_, r3 := c.commit(nil, team.Put(c.k("dir/y"), []byte("y")), team.Delete(c.k("a")))
	wctx, wcancel := context.WithCancel(c.ctx)
	defer wcancel()
	ch := c.d.Watch(wctx, c.k("dir/"), r3)
	_, r4 := c.commit(nil, team.Delete(c.k("dir/x")))
	seen := map[string]int64{}
	for len(seen) < 2 {
		select {
		case b, open := <-ch:
			if !open {
				c.t.Fatalf("the watch closed early (saw %v)", seen)
			}
			for i, key := range b.Keys {
				seen[key] = b.Revs[i]
			}
		case <-c.ctx.Done():
			c.t.Fatalf("the watch sent %v, want dir/y at %d and dir/x at %d", seen, r3, r4)
		}
	}
	if seen[c.k("dir/y")] != r3 || seen[c.k("dir/x")] != r4 {
		c.t.Fatalf("the watch sent %v, want dir/y at %d and dir/x at %d", seen, r3, r4)
	}
	wcancel()
	for range ch { // until the driver closes it
	}
}

// checkLock: exclusive, Held while held and not after Unlock, bounded wait.
func checkLock(c conformance) {
	l1, err := c.d.Lock(c.ctx, c.k("locks/1"), 5*time.Second)
	if err != nil {
		c.t.Fatalf("Lock: %v", err)
	}
	if ok, _ := c.commit([]team.Cond{l1.Held()}, team.Put(c.k("c"), []byte("held"))); !ok {
		c.t.Fatal("a commit under the held lock failed")
	}
	short, scancel := context.WithTimeout(c.ctx, 300*time.Millisecond)
	_, err = c.d.Lock(short, c.k("locks/1"), 5*time.Second)
	scancel()
	if err == nil {
		c.t.Fatal("a second holder took the held lock")
	}
	if !errors.Is(err, team.ErrUnavailable) {
		c.t.Fatalf("a lock wait that ran out: %v, want it to wrap team.ErrUnavailable", err)
	}
	got := make(chan error, 1)
	go func() { got <- c.holdNext() }()
	l1.Unlock()
	if err := <-got; err != nil {
		c.t.Fatalf("the waiter after Unlock: %v", err)
	}
	if ok, _ := c.commit([]team.Cond{l1.Held()}, team.Put(c.k("c"), []byte("stale"))); ok {
		c.t.Fatal("Held held after Unlock")
	}
}

// holdNext waits for locks/1, commits under it and lets it go: the second
// holder, once the first unlocks.
func (c conformance) holdNext() error {
	l2, err := c.d.Lock(c.ctx, c.k("locks/1"), 5*time.Second)
	if err != nil {
		return err
	}
	defer l2.Unlock()
	if ok, _, cerr := c.d.Commit(c.ctx, []team.Cond{l2.Held()}, []team.Op{team.Put(c.k("c"), []byte("held 2"))}); cerr != nil || !ok {
		return fmt.Errorf("a commit under the new holder's lock failed: %v", cerr)
	}
	return nil
}

// checkEndedContext: a context already ended gives an error that wraps
// ErrUnavailable.
func checkEndedContext(c conformance) {
	dead, dcancel := context.WithCancel(c.ctx)
	dcancel()
	if _, _, err := c.d.Get(dead, c.k("c")); !errors.Is(err, team.ErrUnavailable) {
		c.t.Fatalf("Get on an ended context: %v, want it to wrap team.ErrUnavailable", err)
	}
}
