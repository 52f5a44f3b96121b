package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const lockHelperEnv = "SHIPKEY_STORE_LOCK_HELPER"

// TestLockHelper is the child process of TestLockExcludesOtherProcesses; it
// does nothing unless that test started it.
func TestLockHelper(t *testing.T) {
	t.Parallel()
	path := os.Getenv(lockHelperEnv)
	if path == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	lk, err := acquireLock(ctx, path)
	if err != nil {
		fmt.Println("RESULT busy")
		return
	}
	lk.release()
	fmt.Println("RESULT locked")
}

func TestLockExcludesOtherProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "store.lock")
	child := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLockHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(line, "RESULT "); ok {
				return r
			}
		}
		t.Fatalf("helper said nothing:\n%s", out)
		return ""
	}
	lk, err := acquireLock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got := child(); got != "busy" {
		t.Fatalf("another process took a held lock: %s", got)
	}
	// In this process too, a second holder waits (bounded by its context).
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := acquireLock(ctx, path); err == nil || !strings.Contains(err.Error(), "another shipkey process holds it") {
		t.Fatalf("second acquire = %v", err)
	}
	cancel()
	lk.release()
	if got := child(); got != "locked" {
		t.Fatalf("a released lock stayed held: %s", got)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != filePerm {
		t.Fatalf("lock file: %v", err)
	}
}
