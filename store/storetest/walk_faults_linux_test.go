package storetest

import (
	"testing"

	"github.com/shipkey/shipkey/store"
)

// TestEachKeyFewPageFaults: a walk over the keys (keys list, status) reads
// each key's state in the state bucket's order, a chunk of keys at a time,
// so it page-faults far less than once a key. Read in label order, each
// key's state is a lookup at a random place in state.db and, with the
// pages released every few hundred keys to keep memory flat, a page fault
// each (more than one a key at 20,000 keys). Counted by the kernel for the
// walking thread alone (WalkFaults); the least of up to three walks. Not
// parallel: it locks its goroutine to its thread.
func TestEachKeyFewPageFaults(t *testing.T) {
	const n = 20000
	st, err := store.Open(Populate(t, n, store.BackendPlaintext).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Read in label order a walk makes about 1.2 faults a key; the chunked
	// walk 0.12 on a warm page cache, up to 0.5 on a fresh clone's CI run.
	bound := int64(n * 8 / 10)
	best := WalkFaults(t, st, n, bound)
	t.Logf("a walk of %d keys: %d page faults (%.2f a key)", n, best, float64(best)/n)
	if best > bound {
		t.Errorf("a walk of %d keys made %d page faults (%.2f a key): each key's state is read from a random place", n, best, float64(best)/n)
	}
}
