//go:build linux

package cli

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shipkey/shipkey/store"
)

// TestTokenHoldersAreNotDumpable: serve, exec (whose parent holds the
// token while its command runs) and the app mark the process not dumpable before they
// read a secret, so no core file and no same-user ptrace sees the tokens.
// Not parallel: the flag belongs to the whole test process, and this test
// sets it back to dumpable before each command.
func TestTokenHoldersAreNotDumpable(t *testing.T) {
	noStore := func() (*store.Store, error) { return nil, errors.New("no store in this test") }
	ios, _, _ := testIO("")
	for name, run := range map[string]func() error{
		"serve": func() error {
			return serveRun(context.Background(), &serveOptions{IO: ios, Store: noStore, Socket: t.TempDir() + "/s"})
		},
		"app": func() error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the app ends at once: only what it does first matters here
			return runTUI(ctx, uiOptions{Now: time.Now})
		},
		"exec": func() error {
			return execRun(context.Background(), &execOptions{IO: ios, Store: noStore, Command: []string{"true"}, EnvName: "T"})
		},
	} {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := run(); err == nil {
			t.Fatalf("%s: ran without a store", name)
		}
		d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d != 0 {
			t.Errorf("%s: the process is still dumpable (%d) after reading its secrets", name, d)
		}
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
}
