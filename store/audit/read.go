package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// maxLine bounds a line read back (an entry is far smaller: Bounded).
const maxLine = 1 << 20

// Read calls fn with each entry of the trail, oldest first. A line that is
// not a whole entry is skipped (Verify names it); fn's error stops the
// walk and is returned.
func (l *Log) Read(fn func(Entry) error) error {
	files, err := l.Files()
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := eachLine(path, func(_ int, line []byte, _ bool) error {
			e, err := decode(line)
			if err != nil {
				return nil
			}
			return fn(e)
		}); err != nil {
			return err
		}
	}
	return nil
}

// eachLine calls fn with each line of path (without "\n"), numbered from 1;
// complete is false for a last line without its "\n".
func eachLine(path string, fn func(n int, line []byte, complete bool) error) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // rotated away meanwhile
		}
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than any entry: gather it, up to maxLine.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) < maxLine {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			complete := line[len(line)-1] == '\n'
			if ferr := fn(n, bytes.TrimSuffix(line, []byte("\n")), complete); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// Problem is the first place where the trail does not fit.
type Problem struct {
	File string // the file's path
	Line int    // its line, from 1
	// Entry is the entry there, as far as it could be read (its Time and
	// Key name it to a person).
	Entry  Entry
	Reason string
}

func (p *Problem) Error() string {
	name := filepath.Base(p.File)
	if p.Entry.Key != "" && !p.Entry.Time.IsZero() {
		return fmt.Sprintf("%s line %d (%s, key %s): %s", name, p.Line, p.Entry.Time.Format("2006-01-02T15:04:05.000Z"), p.Entry.Key, p.Reason)
	}
	return fmt.Sprintf("%s line %d: %s", name, p.Line, p.Reason)
}

// Report is what Verify found.
type Report struct {
	Files   []string // the files checked, oldest first
	Entries int      // the entries that fit
	// Last is the hash of the last entry that fits: written down elsewhere,
	// it lets a later Verify show that nothing was cut from the end.
	Last string
	// Cut is set when the newest file ends in a line a crash left
	// unfinished (tolerated; the next append cuts it away).
	Cut bool
	// Anchored is false when the oldest kept file continues one that
	// rotation removed: its first entry's prev cannot be checked.
	Anchored bool
	// Problem is the first entry that does not fit; nil when all do.
	Problem *Problem
}

// Verify checks every entry against its hash and its predecessor's, oldest
// first, and reports the first that does not fit. Its error is for a trail
// it could not read, not for one that does not fit (Report.Problem).
func (l *Log) Verify() (Report, error) {
	files, err := l.Files()
	if err != nil {
		return Report{}, err
	}
	rep := Report{Files: files, Anchored: true}
	c := &chainCheck{rep: &rep, first: true}
	// Rotation removes a file only once Keep newer ones are rotated: with
	// fewer, the files before the oldest were removed by someone else.
	if n := l.rotatedCount(files); n < l.opts.Keep {
		c.unrotated = fmt.Sprintf("it follows an entry the trail does not hold (files before it were removed: rotation keeps %d rotated files, the trail has %d)", l.opts.Keep, n)
	}
	for fi, path := range files {
		err := c.file(fi, path, fi == len(files)-1)
		var p *Problem
		if errors.As(err, &p) {
			rep.Problem = p
			break
		}
		if err != nil {
			return rep, err
		}
	}
	if rep.Problem == nil && c.start != nil {
		rep.Problem, rep.Entries, c.prev = c.start, 0, ""
	}
	rep.Last = c.prev
	return rep, nil
}

// rotatedCount is how many of files are rotated ones.
func (l *Log) rotatedCount(files []string) int {
	if len(files) > 0 && files[len(files)-1] == l.Path() {
		return len(files) - 1
	}
	return len(files)
}

// chainCheck is Verify's walk: the report it fills, the hash of the entry
// before and whether none came yet; unrotated is what to say of a first
// entry whose predecessor's file is gone when rotation did not remove it
// ("" when it did), start that problem once found.
type chainCheck struct {
	rep       *Report
	prev      string
	first     bool
	unrotated string
	start     *Problem
}

// file checks the entries of path, the fi'th file, oldest first; an
// unfinished line is a problem unless it ends the newest file.
func (c *chainCheck) file(fi int, path string, newest bool) error {
	var pending *Problem // an unfinished line, a problem unless it is the trail's last
	err := eachLine(path, func(n int, line []byte, complete bool) error {
		if pending != nil {
			return pending
		}
		e, err := decode(line)
		if err != nil {
			p := &Problem{File: path, Line: n, Entry: e, Reason: err.Error()}
			if !complete {
				p.Reason = "the line was cut short"
				pending = p
				return nil
			}
			return p
		}
		return c.link(fi, path, n, e)
	})
	if pending == nil || err != nil {
		return err
	}
	if newest {
		c.rep.Cut = true
		return nil
	}
	return pending
}

// link checks that e, line n of path, follows the entry before it; the
// trail's first entry may follow one rotated away.
func (c *chainCheck) link(fi int, path string, n int, e Entry) error {
	if c.first {
		c.first = false
		if e.Prev != "" && fi == 0 && rotatedNumber(path) > 1 {
			c.rep.Anchored = false // its predecessor was rotated away
			if c.unrotated != "" {
				// Said unless a break further on names the damage.
				c.start = &Problem{File: path, Line: n, Entry: e, Reason: c.unrotated}
			}
		} else if e.Prev != "" {
			return &Problem{File: path, Line: n, Entry: e, Reason: "it follows an entry the trail does not hold (an entry before it was removed)"}
		}
	} else if e.Prev != c.prev {
		return &Problem{File: path, Line: n, Entry: e, Reason: "it does not follow the entry before it (an entry was removed, added or moved)"}
	}
	c.prev = e.Hash
	c.rep.Entries++
	return nil
}

// tailBytes bounds what Tail reads of the current file's end.
const tailBytes = 256 << 10

// Tail returns up to n of the newest entries, oldest first, read from the
// end of the current file, and of the newest rotated one when the current
// file holds fewer (just after a rotation): what a screen that follows the
// trail shows. Lines that are not whole entries are skipped.
func (l *Log) Tail(n int) ([]Entry, error) {
	out, whole, err := tailOf(l.Path(), n)
	if err != nil || len(out) >= n || !whole {
		return out, err
	}
	if names, err := l.rotated(); err == nil && len(names) > 0 {
		if older, _, err := tailOf(names[len(names)-1], n-len(out)); err == nil {
			out = append(older, out...)
		}
	}
	return out, nil
}

// tailOf is up to n of the last entries of the file at path, oldest first,
// and whether the whole file was read (true for a file that is not there).
func tailOf(path string, n int) ([]Entry, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := min(fi.Size(), tailBytes)
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, fi.Size()-size); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	lines := bytes.Split(buf, []byte("\n"))
	if size < fi.Size() && len(lines) > 0 {
		lines = lines[1:] // the first is cut by where the read began
	}
	var out []Entry
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if e, err := decode(lines[i]); err == nil {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out, size == fi.Size(), nil
}
