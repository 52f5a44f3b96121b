//go:build unix

package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// The costs that grow with the store, at 1k, 10k and 100k keys
// (storetest.Populate, plaintext backend, cached under os.TempDir: only the
// first run pays for generating the stores). Each reports the CPU time
// (user and system, of the whole process: the collector's included) of one
// operation, cpu-ms/op:
//
//	go test ./store -run '^$' -bench 'Scale' -benchtime 3x
//
// The figures and their goals are in docs/performance-scale.md.

var scaleSizes = []int{1000, 10000, 100000}

// cpuTime is this process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScaleRebuild is the rebuild of the index after config.toml
// changed behind shipkey's back (a hand edit, a copy, a restore): config.toml
// touched, then a Store opened, which reads the settings through the
// index and so rebuilds it.
func BenchmarkScaleRebuild(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ss := storetest.Populate(b, n, store.BackendPlaintext)
			cfg := filepath.Join(ss.ConfigDir, "config.toml")
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				t := time.Now()
				if err := os.Chtimes(cfg, t, t); err != nil {
					b.Fatal(err)
				}
				sweptAt(b, ss, t) // the sweep is BenchmarkScaleSetDefault's
				b.StartTimer()
				before := cpuTime(b)
				st, err := store.Open(ss.Options())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.Resolve(storetest.Label(n / 2)); err != nil {
					b.Fatal(err)
				}
				_ = st.Close()
				cpu += cpuTime(b) - before
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// sweptAt sets the time of ss's last sweep.
func sweptAt(b *testing.B, ss storetest.Store, t time.Time) {
	stamp := filepath.Join(ss.StateDir, ".swept")
	if err := os.WriteFile(stamp, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Chtimes(stamp, t, t); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScaleSetDefault is `shipkey keys default LABEL`: a Store opened,
// the default set (a change of config.toml, under store.lock), closed. A
// writer sweeps when no sweep ran in the last minute (store-wide): with
// sweep=false the last sweep was just now, with sweep=true a minute ago,
// so the call also sweeps (what one writer a minute pays).
func BenchmarkScaleSetDefault(b *testing.B) {
	for _, sweep := range []bool{false, true} {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("sweep=%v/keys=%d", sweep, n), func(b *testing.B) { benchSetDefault(b, n, sweep) })
		}
	}
}

func benchSetDefault(b *testing.B, n int, sweep bool) {
	ss := storetest.Populate(b, n, store.BackendPlaintext)
	warm, err := store.Open(ss.Options()) // the index in step with config.toml
	if err != nil {
		b.Fatal(err)
	}
	_ = warm.Close()
	var cpu time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		last := time.Now()
		if sweep {
			last = last.Add(-2 * time.Minute)
		}
		sweptAt(b, ss, last)
		b.StartTimer()
		before := cpuTime(b)
		st, err := store.Open(ss.Options())
		if err != nil {
			b.Fatal(err)
		}
		i++
		if err := st.SetDefault(storetest.Label(i % 2)); err != nil {
			b.Fatal(err)
		}
		_ = st.Close()
		cpu += cpuTime(b) - before
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
