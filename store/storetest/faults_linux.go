package storetest

import (
	"runtime"
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
