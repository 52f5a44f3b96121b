package audit_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/audit"
)

func entry(i int) audit.Entry {
	return audit.Entry{
		Time: time.Date(2026, 11, 28, 12, 0, i, 0, time.UTC), Key: fmt.Sprintf("key%d", i%3), What: audit.Token, Via: "token",
		Fingerprint: audit.Fingerprint(fmt.Sprintf("token-%d", i)),
		To:          audit.Receiver{UID: 1000, PID: 4000 + i, Exe: "/usr/bin/sh", Cmdline: []string{"sh", "-c", "deploy"}},
		By:          5000 + i,
	}
}

func appendN(t *testing.T, l *audit.Log, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyOK(t *testing.T, l *audit.Log, want int) audit.Report {
	t.Helper()
	rep, err := l.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil {
		t.Fatalf("verify: %v", rep.Problem)
	}
	if rep.Entries != want {
		t.Fatalf("verify counted %d entries, want %d", rep.Entries, want)
	}
	return rep
}

func TestAppendChainsAndReadsBack(t *testing.T) {
	t.Parallel()
	l := audit.Open(t.TempDir(), audit.Options{})
	appendN(t, l, 5)
	rep := verifyOK(t, l, 5)
	var got []audit.Entry
	if err := l.Read(func(e audit.Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Prev != "" || got[4].Hash != rep.Last {
		t.Fatalf("read %d entries, first prev %q, last hash %q (verify: %q)", len(got), got[0].Prev, got[4].Hash, rep.Last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Prev != got[i-1].Hash {
			t.Fatalf("entry %d does not chain to entry %d", i+1, i)
		}
	}
	if got[2].To.PID != 4002 || got[2].Key != "key2" || got[2].Fingerprint != audit.Fingerprint("token-2") {
		t.Fatalf("entry 3 read back as %+v", got[2])
	}
	raw, _ := os.ReadFile(l.Path())
	if bytes.Contains(raw, []byte("token-2")) {
		t.Fatal("the trail holds a token")
	}
	if fi, err := os.Stat(l.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the trail's mode: %v %v", fi.Mode(), err)
	}
}

// An edit of any entry, anywhere in it, is named by Verify.
func TestVerifyNamesAnEditedEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := audit.Open(dir, audit.Options{})
	appendN(t, l, 6)
	orig, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	edits := []struct{ from, to string }{
		{`"key`, `"kez`}, {`"pid":40`, `"pid":41`}, {`"via":"token"`, `"via":"tokem"`}, {`"prev":"`, `"prev":"0`}, {`"hash":"`, `"hash":"0`}, {`"what":"token"`, `"what":"token","x":1`},
	}
	for i := range 6 {
		ed := edits[i]
		changed := bytes.Clone(orig)
		start := len(bytes.Join(lines[:i], nil))
		line := bytes.Replace(lines[i], []byte(ed.from), []byte(ed.to), 1)
		if bytes.Equal(line, lines[i]) {
			t.Fatalf("edit %q not applied to line %d", ed.from, i+1)
		}
		changed = append(append(changed[:start:start], line...), orig[start+len(lines[i]):]...)
		if err := os.WriteFile(l.Path(), changed, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := l.Verify()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problem == nil || rep.Problem.Line != i+1 {
			t.Fatalf("edit %q of line %d: verify found %v", ed.from, i+1, rep.Problem)
		}
		if !strings.Contains(rep.Problem.Error(), fmt.Sprintf("line %d", i+1)) {
			t.Fatalf("the problem does not name line %d: %v", i+1, rep.Problem)
		}
	}
	// A removed entry: the one after it is named.
	if err := os.WriteFile(l.Path(), bytes.Join(append(lines[:2:2], lines[3:]...), nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.Verify(); rep.Problem == nil || rep.Problem.Line != 3 {
		t.Fatalf("a removed third entry: verify found %v", rep.Problem)
	}
	// The first entry removed: the new first is named.
	if err := os.WriteFile(l.Path(), bytes.Join(lines[1:], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.Verify(); rep.Problem == nil || rep.Problem.Line != 1 {
		t.Fatalf("a removed first entry: verify found %v", rep.Problem)
	}
}

// A line cut short at the end is tolerated by Verify and cut away by the
// next append; anywhere else it is a problem.
func TestCutLastLineIsRepairedByNextAppend(t *testing.T) {
	t.Parallel()
	l := audit.Open(t.TempDir(), audit.Options{})
	appendN(t, l, 3)
	full, _ := os.ReadFile(l.Path())
	f, err := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-11-28T12:00:09Z","key":"half`)
	f.Close()
	rep := verifyOK(t, l, 3)
	if !rep.Cut {
		t.Fatal("verify did not report the cut last line")
	}
	if _, err := l.Append(entry(7)); err != nil {
		t.Fatal(err)
	}
	rep = verifyOK(t, l, 4)
	if rep.Cut {
		t.Fatal("the cut line is still there after an append")
	}
	now, _ := os.ReadFile(l.Path())
	if !bytes.HasPrefix(now, full) || bytes.Contains(now, []byte("half")) {
		t.Fatal("the append did not cut the unfinished line away, or changed what was before it")
	}
	// Cut in the middle (an entry followed by more): a problem.
	lines := bytes.SplitAfter(now, []byte("\n"))
	mid := append(bytes.Clone(lines[0]), lines[1][:20]...)
	mid = append(mid, bytes.Join(lines[1:], nil)...)
	os.WriteFile(l.Path(), mid, 0o600)
	if rep, _ := l.Verify(); rep.Problem == nil || rep.Problem.Line != 2 {
		t.Fatalf("a cut line in the middle: verify found %v", rep.Problem)
	}
}

// Rotation by size chains a new file's first entry to the last of the one
// before; past Keep the oldest go and the chain starts at the oldest kept.
func TestRotationKeepsTheChain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := audit.Open(dir, audit.Options{MaxBytes: 1500, Keep: 3})
	appendN(t, l, 24)
	files, err := l.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 || filepath.Base(files[3]) != audit.CurrentFile {
		t.Fatalf("files %v, want 3 rotated and the current one", files)
	}
	rep, err := l.Verify()
	if err != nil || rep.Problem != nil {
		t.Fatalf("verify after rotations: %v %v", err, rep.Problem)
	}
	if rep.Anchored {
		t.Fatal("the oldest kept file continues a removed one: not anchored")
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Size() > 1500 {
			t.Fatalf("%s is %d bytes, past MaxBytes", f, fi.Size())
		}
	}
	// The first entry of the current file follows the last of the newest
	// rotated file: removing that file breaks the chain there.
	os.Remove(files[2])
	rep, _ = l.Verify()
	if rep.Problem == nil || rep.Problem.File != files[3] || rep.Problem.Line != 1 {
		t.Fatalf("a rotated file removed: verify found %v", rep.Problem)
	}
}

func TestConcurrentAppendsChain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			l := audit.Open(dir, audit.Options{MaxBytes: 8000, Keep: 10}) // a Log each: the file lock orders them
			for i := range 25 {
				if _, err := l.Append(entry(g*100 + i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rep, err := audit.Open(dir, audit.Options{}).Verify()
	if err != nil || rep.Problem != nil || rep.Entries != 100 || len(rep.Files) < 3 {
		t.Fatalf("verify: %v %v, %d entries", err, rep.Problem, rep.Entries)
	}
}

func TestBoundedReceiver(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 900)
	r := audit.Receiver{Exe: strings.Repeat("x", 5000), Cmdline: []string{long, long, long, long}}.Bounded()
	total := 0
	for _, a := range r.Cmdline {
		total += len(a)
	}
	if len(r.Exe) != audit.MaxExe || total > audit.MaxCmdline+len("…") || len(r.Cmdline) != 3 {
		t.Fatalf("bounded: exe %d bytes, cmdline %d args %d bytes", len(r.Exe), len(r.Cmdline), total)
	}
}

func TestTailReturnsTheNewest(t *testing.T) {
	t.Parallel()
	l := audit.Open(t.TempDir(), audit.Options{})
	if got, err := l.Tail(3); err != nil || len(got) != 0 {
		t.Fatalf("tail of no trail: %v %v", got, err)
	}
	appendN(t, l, 5)
	got, err := l.Tail(3)
	if err != nil || len(got) != 3 || got[0].By != 5002 || got[2].By != 5004 {
		t.Fatalf("tail 3 of 5: %+v %v", got, err)
	}

	// Just after a rotation the current file holds one entry: the rest
	// come from the newest rotated file (the Activity screen does not go
	// blank).
	r := audit.Open(t.TempDir(), audit.Options{MaxBytes: 1500, Keep: 3})
	for i := 0; ; i++ {
		if _, err := r.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
		if files, _ := r.Files(); len(files) == 2 {
			break
		}
		if i > 100 {
			t.Fatal("no rotation")
		}
	}
	got, err = r.Tail(3)
	if err != nil || len(got) != 3 || got[2].By-got[0].By != 2 {
		t.Fatalf("tail 3 just after a rotation: %+v %v", got, err)
	}
}

// TestAppendRefusesALinkInPlaceOfTheFile: someone who can write the trail's
// directory puts a symbolic link where the current file is; an append
// neither writes through it nor cuts the target's unfinished last line.
func TestAppendRefusesALinkInPlaceOfTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(t.TempDir(), "notes.txt")
	const notes = "first line\nlast line without its newline"
	if err := os.WriteFile(other, []byte(notes), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dir, audit.CurrentFile)); err != nil {
		t.Fatal(err)
	}
	l := audit.Open(dir, audit.Options{})
	_, err := l.Append(entry(0))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("append through a link: %v, want a refusal naming the link", err)
	}
	if got, _ := os.ReadFile(other); string(got) != notes {
		t.Fatalf("the link's target became %q", got)
	}
}

// Rotation removes the oldest file only once Keep newer ones are rotated:
// oldest files removed down to fewer than that were removed by someone
// else, and verify says so rather than start the chain there.
func TestVerifyFindsOldestFilesRemovedBelowKeep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := audit.Open(dir, audit.Options{MaxBytes: 1500, Keep: 3})
	appendN(t, l, 24)
	files, err := l.Files()
	if err != nil || len(files) != 4 {
		t.Fatalf("files %v, %v; want 3 rotated and the current one", files, err)
	}
	os.Remove(files[0])
	rep, err := l.Verify()
	if err != nil || rep.Problem == nil || rep.Problem.File != files[1] || rep.Problem.Line != 1 || !strings.Contains(rep.Problem.Reason, "removed") {
		t.Fatalf("the oldest rotated file removed: verify found %v, %v; want the first entry of %s", rep.Problem, err, files[1])
	}
}
