package store_test

import (
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// TestEachKeyReadsStatePagesOnce: a walk over a store of many chunks (20,000
// keys read 500 at a time: 40 chunks, where 100,000 keys are 13 of 8,192)
// reads each page of state.db about once. Looked up chunk by chunk, a
// chunk's states are spread over much of the state bucket, whose pages the
// walk then reads again for every chunk (released every few hundred keys in
// between, so a page fault for many of them each time): 0.45 faults a key
// here. The walk partitions the states by chunk in a temporary file
// instead: 0.08 (0.1 with -race). Counted by the kernel for the walking
// thread alone (RUSAGE_THREAD); the least of up to three walks (storetest.WalkFaults).
// Not parallel: it locks its goroutine to its thread.
func TestEachKeyReadsStatePagesOnce(t *testing.T) {
	const n, chunk = 20000, 500
	st, err := store.Open(storetest.Populate(t, n, store.BackendPlaintext).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store.SetWalkChunk(st, chunk)
	bound := int64(n / 5)
	best := storetest.WalkFaults(t, st, n, bound)
	t.Logf("a walk of %d keys, %d at a time: %d page faults (%.2f a key)", n, chunk, best, float64(best)/n)
	if best > bound {
		t.Errorf("a walk of %d keys, %d at a time, made %d page faults (%.2f a key): it reads the state bucket again for every chunk", n, chunk, best, float64(best)/n)
	}
}
