package keys

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/storetest"
)

// A hand-out is recorded once: Token with HandOut makes one entry each
// call, without it none; an API client's Source one per token, however
// many requests send it. When the entry cannot be written, no token is
// handed out.
func TestHandOutsAreRecordedOnce(t *testing.T) {
	t.Parallel()
	gen := storetest.Populate(t, 1, "plaintext")
	st, err := store.Open(gen.Options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := audit.Open(t.TempDir(), audit.Options{})
	svc := New(Options{Store: st, Audit: l, Receiver: func() audit.Receiver { return audit.Receiver{UID: 7, PID: 4242, Exe: "/bin/caller"} }})
	ctx := context.Background()
	label := storetest.Label(0)
	entries := func() []audit.Entry {
		t.Helper()
		var es []audit.Entry
		if err := l.Read(func(e audit.Entry) error { es = append(es, e); return nil }); err != nil {
			t.Fatal(err)
		}
		return es
	}

	if _, err := svc.Token(ctx, label, TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(entries()); n != 0 {
		t.Fatalf("a token not handed out made %d entries", n)
	}
	tok, err := svc.Token(ctx, label, TokenOptions{HandOut: &HandOut{What: audit.Token, Via: "token"}})
	if err != nil {
		t.Fatal(err)
	}
	es := entries()
	if len(es) != 1 || es[0].Key != label || es[0].Via != "token" || es[0].To.PID != 4242 || es[0].Fingerprint != audit.Fingerprint(tok.AccessToken) || es[0].By != os.Getpid() {
		t.Fatalf("entries after one hand-out: %+v", es)
	}

	src := svc.Source(tok.Key, ClientOptions{HandOut: &HandOut{What: audit.Header, Via: "api"}})
	for range 3 {
		if _, err := src(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if es := entries(); len(es) != 2 || es[1].Via != "api" || es[1].What != audit.Header {
		t.Fatalf("three requests with one token: %+v", es)
	}

	// The trail's folder is a file: nothing is handed out.
	bad := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(bad, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	broken := New(Options{Store: st, Audit: audit.Open(bad, audit.Options{})})
	got, err := broken.Token(ctx, label, TokenOptions{HandOut: &HandOut{What: audit.Token, Via: "token"}})
	if err == nil || got.TokenSet != nil || !strings.Contains(err.Error(), "SHIPKEY_AUDIT=off") {
		t.Fatalf("a trail that cannot be written: token %v, error %v", got.TokenSet != nil, err)
	}
	if err := broken.RecordApp(label, audit.Copy, tok.AccessToken); err == nil {
		t.Fatal("RecordApp wrote to a trail that cannot be written")
	}
}
