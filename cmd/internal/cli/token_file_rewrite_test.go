package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store/audit"
)

// A token file that another program removes (a tmp cleaner, a person) or
// replaces is written again at once with the same token, not at the next
// renewal (minutes away): the program reading it never meets a missing
// file for long. The token handed out is the same, so the audit trail
// takes no second entry; the keeper says what happened, once each time.
func TestTokenFileRemovedByHandIsWrittenAgain(t *testing.T) {
	t.Parallel()
	st, _, _ := sinkTestStore(t, authtest.DemoConfig(), time.Now, "k")
	svc := newKeys(st, nil, nil, nil, time.Now, nil)
	path := filepath.Join(t.TempDir(), "token")
	var mu sync.Mutex
	var said []string
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf(format, args...))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runSinks(ctx, svc, newSinks(st, svc, []sinkSpec{{Path: path, Label: "k"}}, say))
	}()
	defer func() { cancel(); <-done }()

	var first string
	if !eventually(10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		first = string(b)
		return err == nil && first != ""
	}) {
		t.Fatal("no token file written")
	}
	for round, replace := range []bool{false, true} {
		if replace {
			if err := os.WriteFile(path+".other", []byte("not a token"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".other", path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if !eventually(10*time.Second, func() bool {
			b, err := os.ReadFile(path)
			return err == nil && string(b) == first
		}) {
			b, err := os.ReadFile(path)
			mu.Lock()
			t.Fatalf("round %d: the file holds %q (%v), not the token again; said %q", round, b, err, said)
		}
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(said, "\n")
	if n := strings.Count(all, "removed or replaced by another program"); n != 2 {
		t.Errorf("said the file went %d times, want 2 (once a time):\n%s", n, all)
	}
	if n := strings.Count(all, "written again"); n != 2 {
		t.Errorf("said written again %d times, want 2:\n%s", n, all)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("the token file outlived its keeper")
	}
	if a := svc.Audit(); a != nil {
		var got []audit.Entry
		if err := a.Read(func(e audit.Entry) error { got = append(got, e); return nil }); err != nil {
			t.Fatal(err)
		}
		if n := len(slices.DeleteFunc(got, func(e audit.Entry) bool { return e.Via != "token file "+path })); n != 1 {
			t.Errorf("%d hand-outs to the file in the audit trail, want 1 (the same token written again)", n)
		}
	}
}
