package storetest

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shipkey/shipkey/store"
)

// WalkFaults walks st's n keys (store.EachKey) up to three times, until a
// walk makes no more than bound page faults, and returns the fewest one
// walk made, counted by the kernel for the walking thread alone
// (RUSAGE_THREAD): load only adds faults. It locks the calling goroutine to
// its thread meanwhile.
func WalkFaults(tb testing.TB, st *store.Store, n int, bound int64) int64 {
	tb.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := int64(-1)
	for range 3 {
		var before, after unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
			tb.Skipf("getrusage: %v", err)
		}
		i := 0
		if err := st.EachKey(func(store.Key) error { i++; return nil }); err != nil || i != n {
			tb.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
		}
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
			tb.Fatal(err)
		}
		faults := (after.Minflt - before.Minflt) + (after.Majflt - before.Majflt)
		if best < 0 || faults < best {
			best = faults
		}
		if best <= bound {
			break
		}
	}
	return best
}

// WalkMapped walks st's n keys (store.EachKey) and returns the most of
// state.db that this process had mapped (the Rss of its mappings in
// /proc/self/smaps, in KiB) at any of the points it looked, every every keys.
func WalkMapped(tb testing.TB, st *store.Store, n, every int) int {
	tb.Helper()
	most, i := 0, 0
	err := st.EachKey(func(store.Key) error {
		if i++; i%every == 0 {
			most = max(most, mappedKiB(tb, "/state.db"))
		}
		return nil
	})
	if err != nil || i != n {
		tb.Fatalf("EachKey walked %d keys of %d: %v", i, n, err)
	}
	return most
}

// mappedKiB is the Rss of this process's mappings of files whose path ends
// in suffix, in KiB.
func mappedKiB(tb testing.TB, suffix string) int {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		tb.Skipf("smaps: %v", err)
	}
	kib, in := 0, false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && strings.Contains(f[0], "-"): // a mapping's first line
			in = strings.HasSuffix(f[len(f)-1], suffix)
		case in && len(f) == 3 && f[0] == "Rss:":
			n, _ := strconv.Atoi(f[1])
			kib += n
		}
	}
	return kib
}
