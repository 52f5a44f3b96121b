package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestWritersSweepOnceAMinute: the commands that change config.toml sweep
// what killed processes left behind at most once a minute store-wide (by
// the sweep's clock), not on every write: at 100,000 keys a sweep costs
// seconds, and `keys default` paid it every time.
func TestWritersSweepOnceAMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var mu sync.Mutex
	clock := time.Now()
	opts := Options{Backend: BackendPlaintext}
	opts.hooks.sweepNow = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	a := e.open(opts)
	e.create(a, "k", false) // sweeps: none ran yet
	b := e.open(opts)       // another process

	stale := filepath.Join(e.cfgDir, ".config.toml.tmp-123456")
	leave := func() {
		t.Helper()
		if err := os.WriteFile(stale, nil, filePerm); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * staleTemp)
		if err := os.Chtimes(stale, old, old); err != nil {
			t.Fatal(err)
		}
	}
	swept := func() bool {
		_, err := os.Stat(stale)
		return errors.Is(err, os.ErrNotExist)
	}
	leave()
	for _, step := range []struct {
		s       *Store
		after   time.Duration
		swept   bool
		comment string
	}{
		{a, 10 * time.Second, false, "10 s after the sweep"},
		{b, 40 * time.Second, false, "50 s after the sweep, another process"},
		{b, 15 * time.Second, true, "65 s after the sweep"},
		{a, 5 * time.Second, false, "5 s after the last sweep, by another process"},
		{a, 61 * time.Second, true, "61 s after the last sweep"},
	} {
		advance(step.after)
		if err := step.s.SetDefault("k"); err != nil {
			t.Fatal(err)
		}
		if got := swept(); got != step.swept {
			t.Fatalf("%s: swept %v, want %v", step.comment, got, step.swept)
		}
		if step.swept {
			leave()
		}
	}
}
