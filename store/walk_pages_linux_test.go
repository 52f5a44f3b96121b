package store_test

import (
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// TestEachKeyReadsStatePagesOnce: a walk over a store of many chunks (20,000
// keys read 500 at a time: 40 chunks, where 100,000 keys are 13 of 8,192)
// reads each page of state.db about once, and by pread, not through bbolt's
// memory map. Looked up chunk by chunk, a chunk's states are spread over
// much of the state bucket, whose pages the walk would read again for every
// chunk: 0.45 page faults a key here. The walk partitions the states by
// chunk in a temporary file instead, reading the ids, state and entries
// buckets once each, in order (bucketScan): 0.07 faults a key, most of them
// the walk's own memory (0.14 with -race). Counted by the kernel for the
// walking thread alone (RUSAGE_THREAD); the least of up to three walks
// (storetest.WalkFaults). Meanwhile this process maps no more of state.db
// than the few pages a transaction reads to find the buckets (each fault
// maps up to 64 KiB around its page): 124 KiB, where walking the buckets
// by bbolt's cursor, its pages released every 1,024 keys, maps 500 KiB.
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
	const mappedBound = 256
	mapped := storetest.WalkMapped(t, st, n, 250)
	t.Logf("state.db mapped during the walk: at most %d KiB", mapped)
	if mapped > mappedBound {
		t.Errorf("a walk of %d keys had up to %d KiB of state.db mapped (bound %d): it reads the buckets through bbolt's map", n, mapped, mappedBound)
	}
}
