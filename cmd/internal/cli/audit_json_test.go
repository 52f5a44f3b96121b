package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
)

// audit --json on a terminal prints an entry's C1 controls and bidi marks
// (which JSON leaves as they are) inert: a receiver's command line is
// anyone's text.
func TestAuditJSONOnATerminalIsInert(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConfigDir: t.TempDir(), StateDir: t.TempDir(), Backend: "memory", Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := audit.Entry{Key: "k", What: audit.Token, Via: "token", To: audit.Receiver{PID: 1, Cmdline: []string{"x\u009b31m", "\u202eevil"}}}
	if _, err := audit.Open(auditDir(st), audit.Options{}).Append(e); err != nil {
		t.Fatal(err)
	}
	ios, out, _ := testIO("")
	ios.StdoutTTY = true
	if err := auditRun(context.Background(), &auditOptions{IO: ios, Store: func() (*store.Store, error) { return st, nil }, Now: time.Now, JSON: true}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.ContainsAny(got, "\u009b\u202e\x1b") || !strings.Contains(got, `"key":"k"`) {
		t.Fatalf("audit --json on a terminal printed %q", got)
	}
}
