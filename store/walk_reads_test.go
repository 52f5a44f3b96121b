package store_test

import (
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// TestEachKeyReadsStatePagesOnce: a walk over a store of many chunks (20,000
// keys read 500 at a time: 40 chunks, where 100,000 keys are 13 of 8,192)
// reads each page of the buckets it walks about once, by pread, and no
// state through bbolt's memory map. Looked up chunk by chunk, a chunk's
// states are spread over much of the state bucket, whose pages the walk
// would read again for every chunk (20,000 lookups through the map). The
// walk partitions the states by chunk in a temporary file instead, reading
// the ids (twice: the chunks' bounds, then with the states), state and
// entries buckets whole, in order (bucketScan). Counted by the store's own
// reader (CountWalkReads), not by the kernel's page faults, which measure
// the runtime and the machine as well as the walk.
func TestEachKeyReadsStatePagesOnce(t *testing.T) {
	t.Parallel()
	const n, chunk = 20000, 500
	st, err := store.Open(storetest.Populate(t, n, store.BackendPlaintext).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store.SetWalkChunk(st, chunk)
	buckets, err := store.WalkedBucketPages(st)
	if err != nil {
		t.Fatal(err)
	}
	// entries once, ids twice, state once.
	want := buckets["entries"] + 2*buckets["ids"] + buckets["state"]
	reads := store.CountWalkReads(st)
	i := 0
	if err := st.EachKey(func(store.Key) error { i++; return nil }); err != nil || i != n {
		t.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
	}
	got := reads()
	t.Logf("a walk of %d keys, %d at a time: %d pages in %d preads (buckets %v: %d pages to read), %d buckets and %d states through the map",
		n, chunk, got.Pages, got.Preads, buckets, want, got.MappedScans, got.MappedLookups)
	if got.MappedScans != 0 || got.MappedLookups != 0 {
		t.Errorf("the walk read %d buckets and looked up %d states through bbolt's map: want every pass by pread", got.MappedScans, got.MappedLookups)
	}
	// A pread reads through a gap of up to scanGap pages between two
	// children rather than read them apart (other buckets' pages, free
	// ones): about a quarter more than the buckets hold. Read again for
	// every chunk, the state bucket alone would be 40 times its pages.
	if got.Pages < want || got.Pages > want*3/2 {
		t.Errorf("the walk read %d pages of state.db; the buckets it reads whole hold %d (ids twice): it reads pages again", got.Pages, want)
	}
	if got.Preads > got.Pages/2 {
		t.Errorf("the walk read %d pages in %d preads: neighbouring pages are to be read together", got.Pages, got.Preads)
	}
}

// TestSmallWalkLooksUpEachStateOnce: a store of one chunk looks its states
// up in id order through bbolt's cursor, each once.
func TestSmallWalkLooksUpEachStateOnce(t *testing.T) {
	t.Parallel()
	const n = 300
	st, err := store.Open(storetest.Populate(t, n, store.BackendPlaintext).Options())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reads := store.CountWalkReads(st)
	if err := st.EachKey(func(store.Key) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := reads(); got.MappedLookups != n {
		t.Errorf("a walk of %d keys in one chunk looked up %d states; want %d", n, got.MappedLookups, n)
	}
}

// TestEachKeyHoldsOneChunk: a walk over the keys (keys list, status) holds
// one chunk of keys' states at a time, however many keys there are: at
// 3,000 and at 20,000 keys, read 1,000 at a time, the most it held at once
// is one chunk (the sample that bounds the chunks makes them a few percent
// uneven), and it reads nothing through bbolt's map, whose pages would stay
// resident until released. Counted by the walk itself, where the heap's
// statistics would count the collector's timing too.
func TestEachKeyHoldsOneChunk(t *testing.T) {
	t.Parallel()
	const chunk = 1000
	for _, n := range []int{3000, 20000} {
		st, err := store.Open(storetest.Populate(t, n, store.BackendPlaintext).Options())
		if err != nil {
			t.Fatal(err)
		}
		store.SetWalkChunk(st, chunk)
		reads := store.CountWalkReads(st)
		i := 0
		if err := st.EachKey(func(store.Key) error { i++; return nil }); err != nil || i != n {
			t.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
		}
		st.Close()
		got := reads()
		t.Logf("%d keys: at most %d states held at once", n, got.Held)
		if got.Held == 0 || got.Held > chunk*3/2 {
			t.Errorf("a walk of %d keys, %d at a time, held up to %d keys' states at once: want one chunk", n, chunk, got.Held)
		}
		if got.MappedScans != 0 || got.MappedLookups != 0 {
			t.Errorf("a walk of %d keys read %d buckets and %d states through bbolt's map", n, got.MappedScans, got.MappedLookups)
		}
	}
}
