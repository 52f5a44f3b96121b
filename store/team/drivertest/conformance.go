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

// Conformance checks d against team.Driver's contract. Every key it writes
// is under prefix, which must be empty; d is not closed.
func Conformance(t *testing.T, d team.Driver, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := func(s string) string { return prefix + s }
	commit := func(conds []team.Cond, ops ...team.Op) (bool, int64) {
		t.Helper()
		ok, rev, err := d.Commit(ctx, conds, ops)
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		return ok, rev
	}
	get := func(keys ...string) []*team.KV {
		t.Helper()
		kvs, _, err := d.Get(ctx, keys...)
		if err != nil || len(kvs) != len(keys) {
			t.Fatalf("Get(%v): %d results, %v", keys, len(kvs), err)
		}
		return kvs
	}

	// A key that does not exist: nil, and revision 0 compares equal.
	if kvs := get(k("a")); kvs[0] != nil {
		t.Fatalf("Get of a missing key: %+v", kvs[0])
	}
	ok, r1 := commit([]team.Cond{team.RevIsCond(k("a"), 0)}, team.Put(k("a"), []byte("1")), team.Put(k("dir/x"), []byte("x")))
	if !ok || r1 <= 0 {
		t.Fatalf("create-if-absent: ok %v rev %d", ok, r1)
	}
	kvs := get(k("a"), k("dir/x"), k("b"))
	if kvs[0] == nil || string(kvs[0].Value) != "1" || kvs[0].Rev != r1 || kvs[0].Key != k("a") || kvs[1] == nil || kvs[1].Rev != r1 || kvs[2] != nil {
		t.Fatalf("Get after the commit at %d: %+v %+v %+v", r1, kvs[0], kvs[1], kvs[2])
	}
	// Put-if-revision: a stale revision fails and writes nothing.
	if ok, _ := commit([]team.Cond{team.RevIsCond(k("a"), 0)}, team.Put(k("a"), []byte("2"))); ok {
		t.Fatal("create-if-absent succeeded on an existing key")
	}
	if ok, _ := commit([]team.Cond{team.RevIsCond(k("a"), r1+1000)}, team.Put(k("a"), []byte("2")), team.Put(k("c"), []byte("c"))); ok {
		t.Fatal("a put at a wrong revision succeeded")
	}
	if kvs := get(k("a"), k("c")); string(kvs[0].Value) != "1" || kvs[1] != nil {
		t.Fatal("a failed commit wrote something")
	}
	ok, r2 := commit([]team.Cond{team.RevIsCond(k("a"), r1), {Kind: team.Exists, Key: k("dir/x")}}, team.Put(k("a"), []byte("2")))
	if !ok || r2 <= r1 {
		t.Fatalf("put at the right revision: ok %v rev %d after %d", ok, r2, r1)
	}
	if ok, _ := commit([]team.Cond{{Kind: team.Exists, Key: k("nothing")}}, team.Put(k("c"), []byte("c"))); ok {
		t.Fatal("Exists held for a missing key")
	}
	// NotAfter, on a key and on a prefix.
	if ok, _ := commit([]team.Cond{{Kind: team.NotAfter, Key: k("a"), Rev: r1}}, team.Put(k("c"), []byte("c"))); ok {
		t.Fatal("NotAfter held for a key written after the revision")
	}
	if ok, _ := commit([]team.Cond{{Kind: team.NotAfter, Key: k("dir/"), Prefix: true, Rev: r1}, {Kind: team.NotAfter, Key: k("none/"), Prefix: true, Rev: 1}, {Kind: team.NotAfter, Key: k("a"), Rev: r2}}); !ok {
		t.Fatal("NotAfter failed for keys written at or before the revision")
	}
	if ok, _ := commit([]team.Cond{{Kind: team.NotAfter, Key: k(""), Prefix: true, Rev: r1}}); ok {
		t.Fatal("NotAfter on the prefix held though a key under it was written after")
	}
	// List: every key under the prefix, in order, at one revision.
	_, r3 := commit(nil, team.Put(k("dir/y"), []byte("y")), team.Delete(k("a")))
	list, lrev, err := d.List(ctx, k("dir/"))
	if err != nil || len(list) != 2 || list[0].Key != k("dir/x") || list[1].Key != k("dir/y") || list[1].Rev != r3 || lrev < r3 {
		t.Fatalf("List: %+v at %d, %v", list, lrev, err)
	}
	if kvs := get(k("a")); kvs[0] != nil {
		t.Fatal("a deleted key is still there")
	}
	// A driver that keeps earlier values (team.FormerReader) gives a key as
	// it was at a revision: a's first value at r1, its second at r2, and
	// nothing before it existed.
	if fr, ok := d.(team.FormerReader); ok {
		for _, tc := range []struct {
			at   int64
			want string
		}{{r1, "1"}, {r2, "2"}, {r3 - 1, "2"}, {r1 - 1, ""}} {
			kv, err := fr.GetAt(ctx, k("a"), tc.at)
			switch {
			case err != nil:
				t.Fatalf("GetAt(a, %d): %v", tc.at, err)
			case tc.want == "" && kv != nil, tc.want != "" && (kv == nil || string(kv.Value) != tc.want):
				t.Fatalf("GetAt(a, %d) = %+v, want %q", tc.at, kv, tc.want)
			}
		}
		if kv, err := fr.GetAt(ctx, k("a"), r2); err != nil || kv.Rev != r2 {
			t.Fatalf("GetAt(a, %d): the revision %+v, %v", r2, kv, err)
		}
	}

	// Watch from a revision sees that revision's writes and later ones,
	// deletes included, with their revisions.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	ch := d.Watch(wctx, k("dir/"), r3)
	_, r4 := commit(nil, team.Delete(k("dir/x")))
	seen := map[string]int64{}
	for len(seen) < 2 {
		select {
		case b, open := <-ch:
			if !open {
				t.Fatalf("the watch closed early (saw %v)", seen)
			}
			for i, key := range b.Keys {
				seen[key] = b.Revs[i]
			}
		case <-ctx.Done():
			t.Fatalf("the watch sent %v, want dir/y at %d and dir/x at %d", seen, r3, r4)
		}
	}
	if seen[k("dir/y")] != r3 || seen[k("dir/x")] != r4 {
		t.Fatalf("the watch sent %v, want dir/y at %d and dir/x at %d", seen, r3, r4)
	}
	wcancel()
	for range ch { // until the driver closes it
	}

	// Lock: exclusive, Held while held and not after Unlock, bounded wait.
	l1, err := d.Lock(ctx, k("locks/1"), 5*time.Second)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if ok, _ := commit([]team.Cond{l1.Held()}, team.Put(k("c"), []byte("held"))); !ok {
		t.Fatal("a commit under the held lock failed")
	}
	short, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = d.Lock(short, k("locks/1"), 5*time.Second)
	scancel()
	if err == nil {
		t.Fatal("a second holder took the held lock")
	}
	if !errors.Is(err, team.ErrUnavailable) {
		t.Fatalf("a lock wait that ran out: %v, want it to wrap team.ErrUnavailable", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := d.Lock(ctx, k("locks/1"), 5*time.Second)
		if err == nil {
			defer l2.Unlock()
			if ok, _, cerr := d.Commit(ctx, []team.Cond{l2.Held()}, []team.Op{team.Put(k("c"), []byte("held 2"))}); cerr != nil || !ok {
				err = fmt.Errorf("a commit under the new holder's lock failed: %v", cerr)
			}
		}
		got <- err
	}()
	l1.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after Unlock: %v", err)
	}
	if ok, _ := commit([]team.Cond{l1.Held()}, team.Put(k("c"), []byte("stale"))); ok {
		t.Fatal("Held held after Unlock")
	}

	// A context already ended: an error that wraps ErrUnavailable.
	dead, dcancel := context.WithCancel(ctx)
	dcancel()
	if _, _, err := d.Get(dead, k("c")); !errors.Is(err, team.ErrUnavailable) {
		t.Fatalf("Get on an ended context: %v, want it to wrap team.ErrUnavailable", err)
	}
}
