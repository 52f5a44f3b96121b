package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// File names in the trail's directory.
const (
	CurrentFile = "audit.jsonl"
	lockFile    = "audit.lock"
	rotatedGlob = "audit-*.jsonl"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 8 << 20 // about 20,000 entries a file
	DefaultKeep     = 8       // rotated files kept besides the current one
)

// Options shape a Log.
type Options struct {
	// MaxBytes rotates the current file before an append would take it past
	// this size (0: DefaultMaxBytes).
	MaxBytes int64
	// Keep is how many rotated files are kept (0: DefaultKeep); older ones
	// are removed, and the oldest kept then starts the chain.
	Keep int
	// Sync, when set, syncs the file to the disk after each append (the
	// entry survives a power loss, not only a crash of the process). Off by
	// default: a cached `shipkey token` would pay a disk flush (1.36× its
	// time, docs/performance.md). A file is synced when it is rotated.
	Sync bool
	// LockWait bounds the wait for the lock (0: 10 s).
	LockWait time.Duration
}

// Log is the trail in one directory. It is safe for concurrent use, by
// goroutines and by processes.
type Log struct {
	dir  string
	opts Options
	mu   sync.Mutex // goroutines of this process, before the file lock
}

// Open returns the trail kept in dir (created 0700 at the first append).
func Open(dir string, opts Options) *Log {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.LockWait <= 0 {
		opts.LockWait = 10 * time.Second
	}
	return &Log{dir: dir, opts: opts}
}

// Dir is the trail's directory.
func (l *Log) Dir() string { return l.dir }

// Path is the current file's path.
func (l *Log) Path() string { return filepath.Join(l.dir, CurrentFile) }

// beforeWrite is a test's hook (export_test.go).
var beforeWrite = func() {}

// hashField is what ends each line before the hash.
const hashField = `,"hash":"`

// encode is e's line (with "\n"), chained to prev.
func encode(e Entry, prev string) ([]byte, string, error) {
	e.Prev, e.Hash = prev, ""
	body, err := json.Marshal(e)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	line := make([]byte, 0, len(body)+len(hashField)+len(h)+3)
	line = append(line, body[:len(body)-1]...)
	line = append(line, hashField...)
	line = append(line, h...)
	line = append(line, "\"}\n"...)
	return line, h, nil
}

// decode checks one line (without "\n") against its own hash and returns its
// entry; the chain is the caller's.
func decode(line []byte) (Entry, error) {
	var e Entry
	// Read first, so that a problem can name the entry (its time and key).
	uerr := json.Unmarshal(line, &e)
	i := bytes.LastIndex(line, []byte(hashField))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return e, errors.New("not an entry of the trail (no hash at its end)")
	}
	claimed := string(line[i+len(hashField) : len(line)-2])
	body := make([]byte, 0, i+1)
	body = append(append(body, line[:i]...), '}')
	sum := sha256.Sum256(body)
	if claimed != hex.EncodeToString(sum[:]) || (uerr == nil && e.Hash != claimed) {
		return e, errors.New("its hash does not match its content (the entry was changed)")
	}
	if uerr != nil {
		return e, fmt.Errorf("not an entry of the trail: %v", uerr)
	}
	return e, nil
}

// Append writes e as the trail's next entry (its Time, when zero, is now)
// and returns it as written, with Prev and Hash. It returns only when the
// line is in the file (in the system's cache; on the disk too with
// Options.Sync).
func (l *Log) Append(e Entry) (Entry, error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	e.To = e.To.Bounded()
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := l.lock()
	if err != nil {
		return e, err
	}
	defer unlock()
	f, err := l.openCurrent()
	if err != nil {
		return e, err
	}
	defer f.Close()
	prev, size, err := l.tail(f)
	if err != nil {
		return e, err
	}
	line, h, err := encode(e, prev)
	if err != nil {
		return e, err
	}
	if size > 0 && size+int64(len(line)) > l.opts.MaxBytes {
		if f, err = l.rotate(f); err != nil {
			return e, err
		}
		defer f.Close()
	}
	beforeWrite()
	if _, err := f.Write(line); err != nil {
		return e, err
	}
	if l.opts.Sync {
		if err := f.Sync(); err != nil {
			return e, err
		}
	}
	e.Prev, e.Hash = prev, h
	return e, nil
}

// lock takes the trail's file lock.
func (l *Log) lock() (func(), error) {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, err
	}
	fl := flock.New(filepath.Join(l.dir, lockFile), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.LockWait)
	defer cancel()
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("another shipkey process holds %s", filepath.Join(l.dir, lockFile))
		}
		return nil, fmt.Errorf("waiting for the audit trail's lock: %w", err)
	}
	return func() { _ = fl.Unlock() }, nil
}

// tail is the hash of the trail's last entry and the current file's size,
// after cutting away a line a crash left unfinished at its end. An empty
// current file continues the newest rotated one.
func (l *Log) tail(f *os.File) (string, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	size := fi.Size()
	if size == 0 {
		prev, err := l.lastOfRotated()
		return prev, 0, err
	}
	last, complete, err := lastLine(f, size)
	if err != nil {
		return "", 0, err
	}
	if !complete {
		// The unfinished line goes (see the package doc).
		cut := size - int64(len(last))
		if err := f.Truncate(cut); err != nil {
			return "", 0, fmt.Errorf("cutting the unfinished last line of %s: %w", l.Path(), err)
		}
		if cut == 0 {
			prev, err := l.lastOfRotated()
			return prev, 0, err
		}
		size = cut
		if last, _, err = lastLine(f, size); err != nil {
			return "", 0, err
		}
	}
	return lastHash(last), size, nil
}

// lastHash is the hash a line claims ("" for one that claims none: the
// next entry's prev then does not fit, and Verify names the damage).
func lastHash(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndex(line, []byte(hashField))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return ""
	}
	return string(line[i+len(hashField) : len(line)-2])
}

// lastLine reads the last line of the first size bytes of f (with its
// "\n" when complete).
func lastLine(f *os.File, size int64) ([]byte, bool, error) {
	for n := int64(16 << 10); ; n *= 4 {
		n = min(n, size)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		complete := buf[len(buf)-1] == '\n'
		body := buf
		if complete {
			body = buf[:len(buf)-1]
		}
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			return buf[i+1:], complete, nil
		}
		if n == size {
			return buf, complete, nil
		}
	}
}

// rotated lists the rotated files, oldest first.
func (l *Log) rotated() ([]string, error) {
	names, err := filepath.Glob(filepath.Join(l.dir, rotatedGlob))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, func(a, b string) int { return rotatedNumber(a) - rotatedNumber(b) })
	return names, nil
}

// rotatedNumber is the NNNNNN of audit-NNNNNN.jsonl (-1 for another name).
func rotatedNumber(path string) int {
	s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "audit-"), ".jsonl")
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// lastOfRotated is the hash of the newest rotated file's last entry ("" when
// there is none).
func (l *Log) lastOfRotated() (string, error) {
	names, err := l.rotated()
	if err != nil || len(names) == 0 {
		return "", err
	}
	f, err := os.Open(names[len(names)-1])
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return "", err
	}
	last, _, err := lastLine(f, fi.Size())
	return lastHash(last), err
}

// rotate renames the current file f to the next audit-NNNNNN.jsonl, removes
// rotated files past Keep and returns the new, empty current file.
func (l *Log) rotate(f *os.File) (*os.File, error) {
	names, err := l.rotated()
	if err != nil {
		return nil, err
	}
	next := 1
	if len(names) > 0 {
		next = rotatedNumber(names[len(names)-1]) + 1
	}
	_ = f.Sync() // a full file goes to the disk whole, once (every 8 MiB)
	f.Close()
	if err := os.Rename(l.Path(), filepath.Join(l.dir, fmt.Sprintf("audit-%06d.jsonl", next))); err != nil {
		return nil, fmt.Errorf("rotating the audit trail: %w", err)
	}
	for len(names)+1 > l.opts.Keep {
		_ = os.Remove(names[0])
		names = names[1:]
	}
	return l.openCurrent()
}

// openCurrent opens the current file to append to it (made when missing).
// Only a regular file of that name is taken: a symbolic link or another
// kind of file put there is refused, not followed, so that an append (and
// the cut of an unfinished last line) never reaches another file.
func (l *Log) openCurrent() (*os.File, error) {
	path := l.Path()
	notOurs := func(fi fs.FileInfo) error {
		return fmt.Errorf("%s is not the audit trail's file but %s: move it away (shipkey appends only to a regular file there)", path, fileKind(fi))
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notOurs(fi)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// Made a link between the look and the open: the name must still be
	// the regular file opened.
	opened, err := f.Stat()
	if err == nil {
		var named fs.FileInfo
		if named, err = os.Lstat(path); err == nil && (!named.Mode().IsRegular() || !os.SameFile(named, opened)) {
			err = notOurs(named)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fileKind names what fi is, for a file that is not a regular one.
func fileKind(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	default:
		return "a special file"
	}
}

// Files are the trail's files, oldest first (the current one last, when it
// exists).
func (l *Log) Files() ([]string, error) {
	names, err := l.rotated()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(l.Path()); err == nil {
		names = append(names, l.Path())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return names, nil
}
