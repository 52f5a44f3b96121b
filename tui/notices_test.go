package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
)

func TestNoticesQueueUntilTheAppRunsThenFlow(t *testing.T) {
	t.Parallel()
	var n Notices
	fmt.Fprintf(&n, "shipkey: warning: secrets are stored unencrypted in /x/secrets.json\n")
	var got []string
	n.attach(func(m tea.Msg) { got = append(got, m.(noticeMsg).text.String()) })
	fmt.Fprintf(&n, "shipkey: second \x1b]52;c;ZXZpbA==\x07 line\n\n")
	n.detach()
	fmt.Fprintf(&n, "after\n")
	want := []string{"warning: secrets are stored unencrypted in /x/secrets.json", `second \x1b]52;c;ZXZpbA==\x07 line`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	if len(n.pending) != 1 || n.pending[0].String() != "after" {
		t.Fatalf("pending after detach = %q", n.pending)
	}
}

func TestNoticeShowsOnTheStatusLineUntilTheNextKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.send(noticeMsg{text: text.Trusted("warning: secrets are stored unencrypted in /x/secrets.json")})
	h.mustShow("⚠ warning: secrets are stored unencrypted")
	h.press("2")
	h.mustNotShow("secrets are stored unencrypted")
}
