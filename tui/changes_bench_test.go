//go:build unix

package tui

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// BenchmarkScaleOtherProcessUse is what the open app spends when another
// shipkey process uses a key (its Last Used written: a script calling
// `shipkey token`), at 1k, 10k and 100k keys (storetest.Populate,
// plaintext, cached under the temp dir), the keys table shown: the stamp
// checked, the changed key read and put in the table, a frame rendered.
// cpu-ms/op is the app's CPU time (the whole process's, the collector's
// included; the other process's write is left out), core-%-at-2s what one
// such use every 2 s costs the app, as a share of a core:
//
//	go test ./tui -run '^$' -bench 'ScaleOtherProcessUse' -benchtime 20x
func BenchmarkScaleOtherProcessUse(b *testing.B) {
	b.Setenv(store.EnvKey, "")
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ss := storetest.Populate(b, n, store.BackendPlaintext)
			st, err := store.Open(ss.Options())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			other, err := store.Open(ss.Options())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = other.Close() })
			m, init := startupFrame(b, Options{Store: st, Now: time.Now})
			startupRun(b, m, init)
			m.Update(keyMsg("2"))
			m.View()
			var cpu time.Duration
			i := 0
			for b.Loop() {
				i++
				if err := other.MarkUsed(storetest.Label(i * 7919 % n)); err != nil {
					b.Fatal(err)
				}
				before := processCPU(b)
				startupRun(b, m, m.checkStamp())
				m.View()
				cpu += processCPU(b) - before
			}
			ms := float64(cpu.Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(ms, "cpu-ms/op")
			b.ReportMetric(ms/2000*100, "core-%-at-2s")
		})
	}
}

// processCPU is this process's CPU time so far (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
