//go:build unix

package audit_test

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/shipkey/shipkey/store/audit"
)

const envKillChild = "SHIPKEY_AUDIT_TEST_APPENDER"

// killOptions: small files, so that kills land in rotations too; every
// file kept, so that every entry is counted.
var killOptions = audit.Options{MaxBytes: 6000, Keep: 1000}

// TestKillNineDuringAppends kills a process that appends in a loop, 40
// times at varied moments (as the 1st to 7th append writes), and finds a trail
// that verifies and holds every append that finished.
func TestKillNineDuringAppends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	began := 0
	for round := range 40 {
		c := exec.Command(os.Args[0], "-test.run=^TestAppenderChild$")
		c.Env = append(os.Environ(), envKillChild+"="+dir)
		out, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c.ExtraFiles = []*os.File{w} // fd 3
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		// The child says "." as each append is about to write; kill it
		// as the k-th writes: the k-1 before it are done.
		k := 1 + round%7
		buf := make([]byte, k)
		if _, err := io.ReadFull(out, buf); err != nil {
			t.Fatalf("round %d: the appender said %q: %v", round, buf, err)
		}
		_ = c.Process.Signal(syscall.SIGKILL)
		_ = c.Wait()
		out.Close()
		began += k - 1
	}
	rep, err := audit.Open(dir, killOptions).Verify()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil {
		t.Fatalf("after 40 kills: %v", rep.Problem)
	}
	if rep.Entries < began {
		t.Fatalf("%d entries, but %d appends finished", rep.Entries, began)
	}
	// An append after the kills continues the chain.
	if _, err := audit.Open(dir, killOptions).Append(entry(1)); err != nil {
		t.Fatal(err)
	}
	if rep, _ := audit.Open(dir, killOptions).Verify(); rep.Problem != nil || rep.Cut {
		t.Fatalf("after an append: %v (cut %v)", rep.Problem, rep.Cut)
	}
	t.Logf("%d entries in %d files; %d appends finished before the kills", rep.Entries, len(rep.Files), began)
}

// TestAppenderChild is the process TestKillNineDuringAppends kills.
func TestAppenderChild(t *testing.T) {
	dir := os.Getenv(envKillChild)
	if dir == "" {
		t.Skip("run by TestKillNineDuringAppends")
	}
	l := audit.Open(dir, killOptions)
	e := entry(0)
	e.To.Cmdline = []string{"sh", "-c", strings.Repeat("long command line ", 60)} // a write of about 1.5 KB
	said := os.NewFile(3, "said")
	// Said as each append is about to write: the kill lands in the write
	// or just before or after it.
	audit.SetBeforeWrite(func() { _, _ = said.WriteString(".") })
	for range 10000 {
		if _, err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
}
