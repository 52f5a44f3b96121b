package tui

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/audit"
)

// recordingBackend is a Backend with the key service's RecordApp: it keeps
// what it was asked to record, or fails with err.
type recordingBackend struct {
	Backend
	mu       sync.Mutex
	recorded []string // "label what token"
	err      error
}

func (r *recordingBackend) RecordApp(label string, what audit.What, token string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.recorded = append(r.recorded, label+" "+string(what)+" "+token)
	return nil
}

func (r *recordingBackend) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recorded)
}

func openRecordingDetails(t *testing.T, fail error) (*harness, *recordingBackend) {
	t.Helper()
	var rec *recordingBackend
	h := newHarnessWith(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) }, func(c *config) {
		rec = &recordingBackend{Backend: c.backend, err: fail}
		c.backend = rec
	})
	h.press("1")
	if h.m.active != screenDetails || h.m.details.tokens == nil {
		t.Fatalf("active %v, tokens %v", h.m.active, h.m.details.tokens != nil)
	}
	return h, rec
}

// A reveal and a copy are recorded before the token is shown or copied;
// hiding it again records nothing.
func TestRevealAndCopyAreRecordedFirst(t *testing.T) {
	t.Parallel()
	h, rec := openRecordingDetails(t, nil)
	tok := h.m.details.tokens.AccessToken
	h.press("v")
	if !h.m.details.reveal || rec.count() != 1 || rec.recorded[0] != "demo reveal "+tok {
		t.Fatalf("reveal: shown %v, recorded %q", h.m.details.reveal, rec.recorded)
	}
	h.press("v")
	if h.m.details.reveal || rec.count() != 1 {
		t.Fatalf("hiding: shown %v, recorded %d", h.m.details.reveal, rec.count())
	}
	h.press("c")
	if rec.count() != 2 || rec.recorded[1] != "demo copy "+tok || h.nativeCur != tok {
		t.Fatalf("copy: recorded %q, clipboard holds the token: %v", rec.recorded, h.nativeCur == tok)
	}
}

// When the entry cannot be written, nothing is shown or copied.
func TestNothingHandedOutWithoutAnEntry(t *testing.T) {
	t.Parallel()
	h, _ := openRecordingDetails(t, errors.New("disk full"))
	tok := h.m.details.tokens.AccessToken
	h.press("v")
	if h.m.details.reveal {
		t.Fatal("revealed without an entry")
	}
	h.mustShow("Not handed out: disk full")
	h.press("c")
	if h.nativeCur != "" {
		t.Fatal("copied without an entry")
	}
	h.mustNotShow(tok[:40])
}

// The Activity screen ("5") shows the trail's entries newest first and
// takes a new one when the trail's file changes.
func TestActivityScreenFollowsTheTrail(t *testing.T) {
	t.Parallel()
	l := audit.Open(t.TempDir(), audit.Options{})
	add := func(key, via string, pid int) {
		t.Helper()
		if _, err := l.Append(audit.Entry{Key: key, What: audit.Token, Via: via, Fingerprint: "0123456789abcdef",
			To: audit.Receiver{PID: pid, Exe: "/usr/bin/deploy-script"}}); err != nil {
			t.Fatal(err)
		}
	}
	add("prod", "token", 101)
	add("stage", "exec", 102)
	h := newHarnessWith(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) }, func(c *config) { c.audit = l })
	h.press("5")
	if h.m.active != screenActivity {
		t.Fatalf("5 opened %v", h.m.active)
	}
	v := h.view()
	h.mustShow("stage token exec pid 102 deploy-script", "prod token token pid 101 deploy-script")
	if strings.Index(v, "stage") > strings.Index(v, "prod") {
		t.Fatalf("not newest first:\n%s", v)
	}
	add("prod", "serve", 103)
	h.send(activityChangedMsg{})
	h.mustShow("prod token serve pid 103")
	if v := h.view(); strings.Index(v, "pid 103") > strings.Index(v, "pid 102") {
		t.Fatalf("the new entry is not on top:\n%s", v)
	}
	h.press("esc")
	if h.m.active == screenActivity {
		t.Fatal("esc stayed on Activity")
	}
}

func TestActivityScreenWhenTheTrailIsOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.press("5")
	h.mustShow("The audit trail is off (SHIPKEY_AUDIT=off)")
}

// At 40 columns the screen's notice wraps rather than losing its end (what
// it says of the trail), as the entries' lines are cut.
func TestActivityScreenNoticeWrapsWhenNarrow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
	h.send(windowSize(40, 10))
	h.press("5")
	h.mustShow("recorded.")
}
