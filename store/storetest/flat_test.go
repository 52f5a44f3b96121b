package storetest

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/store"
)

// walkCost is what one store.EachKey walk left on the heap and in memory.
type walkCost struct {
	retained   int64   // live heap at the last key, over the live heap before the walk
	allocPerKy float64 // bytes allocated per key
	mapped     int64   // state.db's resident part at the last key (-1: not known here)
}

// walksPerSize is how many walks a test makes of one store at most: it
// keeps the least of each measure, because what else the process does
// between two readings (the runtime, the test framework, a store generated
// a moment ago on a loaded machine) only ever adds to them. It stops as
// soon as the least pass (a walk that keeps its keys keeps them every
// time), so an idle machine walks each store once.
const walksPerSize = 3

// walker walks one store of n keys and measures each walk.
type walker struct {
	t    *testing.T
	n    int
	st   *store.Store
	path string // state.db
	best walkCost
}

func newWalker(t *testing.T, n int) *walker {
	t.Helper()
	s := Populate(t, n, store.BackendPlaintext)
	st, err := store.Open(s.Options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &walker{t: t, n: n, st: st, path: filepath.Join(s.StateDir, "state.db"),
		best: walkCost{retained: math.MaxInt64, allocPerKy: math.Inf(1), mapped: -1}}
}

// walk walks the store once and measures the walk at its last key: what it
// allocated from its start (TotalAlloc) and what it added to the live heap,
// after a collection. It keeps the least of these two over the walks so
// far, and the most of state.db resident at a walk's end (which load can
// only lower).
func (w *walker) walk() walkCost {
	t, n := w.t, w.n
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC() // and what the first one's finalizers freed
	runtime.ReadMemStats(&before)
	i := 0
	err := w.st.EachKey(func(k store.Key) error {
		if i++; i < n {
			return nil
		}
		runtime.ReadMemStats(&after) // before the collection: TotalAlloc counts the walk alone
		allocated := after.TotalAlloc - before.TotalAlloc
		runtime.GC()
		runtime.ReadMemStats(&after)
		w.best.retained = min(w.best.retained, int64(after.HeapAlloc)-int64(before.HeapAlloc))
		w.best.allocPerKy = min(w.best.allocPerKy, float64(allocated)/float64(n))
		w.best.mapped = max(w.best.mapped, mappedRSS(t, w.path))
		return nil
	})
	if err != nil || i != n {
		t.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
	}
	return w.best
}

// mappedRSS is the resident size of this process's mapping of path
// (/proc/self/smaps), or -1 where there is none to read.
func mappedRSS(t *testing.T, path string) int64 {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	var rss int64 = -1
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if fields := bytes.Fields(line); len(fields) >= 5 && bytes.Contains(fields[0], []byte("-")) && !bytes.HasSuffix(fields[0], []byte(":")) {
			in = len(fields) >= 6 && string(fields[len(fields)-1]) == path
			continue
		}
		if in && bytes.HasPrefix(line, []byte("Rss:")) {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(string(line[4:]), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q", line)
			}
			rss = max(rss, 0) + kb<<10
		}
	}
	return rss
}

// TestEachKeyMemoryFlat: a walk over the keys (keys list, status) keeps
// neither the keys nor what it read: at its last key the live heap it added
// and what it allocated per key are no larger at 20,000 keys than at 10,000
// (both more than the chunk a walk reads at once), and the part of
// state.db mapped in memory stays small (releaseMapped). Not
// parallel: it reads the process's heap statistics. Each size is walked
// up to walksPerSize times and the least heap and allocation kept, so what
// a loaded machine adds to one reading cannot fail it (a walk that keeps
// its keys keeps them every time); the mapped part is the most of any walk.
func TestEachKeyMemoryFlat(t *testing.T) {
	const slack = 1 << 20
	smallW, largeW := newWalker(t, 10000), newWalker(t, 20000)
	var small, large walkCost
	var heapGrows, allocGrows bool
	for range walksPerSize {
		small, large = smallW.walk(), largeW.walk()
		heapGrows = large.retained > max(small.retained, 0)+slack
		allocGrows = large.allocPerKy > 2*small.allocPerKy+256
		if !heapGrows && !allocGrows {
			break
		}
	}
	t.Logf("10k keys: %+v; 20k keys: %+v", small, large)
	if heapGrows {
		t.Errorf("a walk of 20k keys kept %d bytes on the heap, of 10k keys %d: the heap grows with the keys", large.retained, small.retained)
	}
	if allocGrows {
		t.Errorf("a walk allocated %.0f bytes a key at 20k keys, %.0f at 10k", large.allocPerKy, small.allocPerKy)
	}
	// The walk touches about 10 MB of state.db at 20k keys (all of it
	// without releaseMapped); released every 256 keys, under 1 MB stays.
	if large.mapped > 5<<20 {
		t.Errorf("state.db of 20k keys had %.1f MiB resident at the walk's end: its pages are not released", float64(large.mapped)/(1<<20))
	}
	if large.mapped < 0 && runtime.GOOS == "linux" {
		t.Errorf("no mapping of state.db found in /proc/self/smaps")
	}
}
