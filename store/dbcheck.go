package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"time"
)

// state.db is only an index (config.toml is the source of truth for keys, the
// secret files for their tokens), so a damaged state.db is never a reason to
// stop: it is moved aside as state.db.damaged-<time>, rebuilt, and the user is
// told in one line.
//
// bbolt maps the file into memory: a page past the end of a truncated file is
// a SIGBUS, not an error. So the file is checked before it is mapped (its
// meta pages, and that it is as long as they say), and every transaction runs
// with debug.SetPanicOnFault, its panics recovered as damage.

// DamagedDBError is a state.db that cannot be used. Its message names the file
// and what is wrong; it matches nothing else.
type DamagedDBError struct {
	Path   string
	Reason string
	// Faulted: found while reading (a fault, or a bbolt panic on a damaged
	// page), which the check before mapping cannot see.
	Faulted bool
	// seen identifies the file found damaged (inode, size, mtime), so that
	// one another process has set aside and rebuilt meanwhile is left alone.
	seen string
}

// dbIdentity identifies the file at path now ("" when it is missing).
func dbIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprint(fileIdentity(fi), ":", fi.Size(), ":", fi.ModTime().UnixNano())
}

func (e *DamagedDBError) Error() string {
	return fmt.Sprintf("%s is damaged (%s)", displayPath(e.Path), e.Reason)
}

// bbolt's on-disk meta page (go.etcd.io/bbolt/internal/common): a 16-byte
// page header, then magic, version, page size, flags, the root bucket (root
// page, sequence), the freelist page, the high-water page id, the txid and a
// FNV-64a checksum of everything before it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	boltMetaSize   = 4 + 4 + 4 + 4 + 16 + 8 + 8 + 8 + 8
)

type boltMeta struct {
	pageSize uint32
	root     uint64 // the page of the root bucket
	freelist uint64 // the freelist's page, noPage when it is not kept
	hwm      uint64 // the pages below it have been written
	txid     uint64
}

const noPage = ^uint64(0)

func parseBoltMeta(page []byte) (boltMeta, error) {
	if len(page) < boltPageHeader+boltMetaSize {
		return boltMeta{}, errors.New("short meta page")
	}
	m := page[boltPageHeader : boltPageHeader+boltMetaSize]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errors.New("not a bbolt file")
	}
	if le.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, errors.New("unknown bbolt version")
	}
	h := fnv.New64a()
	h.Write(m[:boltMetaSize-8])
	if h.Sum64() != le.Uint64(m[boltMetaSize-8:]) {
		return boltMeta{}, errors.New("meta page checksum mismatch")
	}
	ps := le.Uint32(m[8:])
	if ps < 512 || ps > 1<<20 || ps&(ps-1) != 0 {
		return boltMeta{}, errors.New("implausible page size")
	}
	return boltMeta{pageSize: ps, root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]), hwm: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, nil
}

// checkDBFile checks state.db before bbolt maps it: at least one valid meta
// page, and the file as long as the newest valid one says. It returns nil
// for a missing or empty file (a new store).
func checkDBFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fileError("read", path, err)
	}
	defer f.Close()
	return checkDBOpen(f, path)
}

// checkDBOpen is checkDBFile on state.db open as f (which stays open).
func checkDBOpen(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fileError("read", path, err)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	best, err := newestMeta(f)
	if err != nil {
		var dmg *DamagedDBError
		if errors.As(err, &dmg) {
			dmg.Path = path
			return dmg
		}
		return fileError("read", path, err)
	}
	// Every page bbolt has written lies in the file, the root bucket and the
	// freelist among them. (Damage inside a page is found while reading: see
	// guardFaults.)
	if !best.fits(size) {
		return &DamagedDBError{Path: path, Reason: fmt.Sprintf("cut short at %d bytes", size)}
	}
	return nil
}

// newestMeta is the newer valid one of state.db's two meta pages (f); a
// *DamagedDBError (its Path not set) when neither is valid, another error
// when the first cannot be read.
func newestMeta(f *os.File) (boltMeta, error) {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return boltMeta{}, err
	}
	first, err0 := parseBoltMeta(buf[:n])
	best, found := first, err0 == nil
	pageSize := int64(4096)
	if found {
		pageSize = int64(first.pageSize)
	}
	second := make([]byte, boltPageHeader+boltMetaSize)
	if m, err := f.ReadAt(second, pageSize); err == nil || m == len(second) {
		if m2, err := parseBoltMeta(second); err == nil && (!found || m2.txid > best.txid) && int64(m2.pageSize) == pageSize {
			best, found = m2, true
		}
	}
	if !found {
		return boltMeta{}, &DamagedDBError{Reason: "no valid meta page: " + err0.Error()}
	}
	return best, nil
}

// fits reports whether every page m names (the high-water mark, the root
// bucket, the freelist) lies in a file of size bytes.
func (m boltMeta) fits(size int64) bool {
	pages := uint64(size / int64(m.pageSize))
	return pages >= 2 && m.hwm <= pages && m.root < pages && (m.freelist == noPage || m.freelist < pages)
}

// guardFaults makes a memory fault in this goroutine (a page of the mapped
// state.db that vanished) a panic, and turns a panic of bbolt on a damaged
// page into *err. Use: defer guardFaults(path, &err)() at the top of a
// function that runs transactions.
func guardFaults(path string, err *error) func() {
	prev := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			*err = &DamagedDBError{Path: path, Reason: fmt.Sprintf("reading it failed: %v", r), Faulted: true}
		}
	}
}

// damagedName is where a damaged state.db is moved: beside it, named after
// the time (UTC), so no earlier one is overwritten.
func damagedName(path string, now time.Time) string {
	return path + ".damaged-" + now.UTC().Format("20060102T150405.000Z")
}

// setAsideDB moves a damaged state.db away (caller holds store.lock) and says
// so in one line. The next transaction creates a new one and rebuilds the
// index from config.toml and the state from the secret files.
func (s *Store) setAsideDB(cause *DamagedDBError) error {
	path := s.dbPath()
	if now := dbIdentity(path); now == "" || (cause.seen != "" && now != cause.seen) {
		return nil // another process set it aside (and rebuilt it) meanwhile
	}
	dest := damagedName(path, s.now())
	for n := 2; fileExists(dest); n++ { // never over an earlier one
		dest = damagedName(path, s.now()) + "-" + fmt.Sprint(n)
	}
	if err := os.Rename(path, dest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fileError("move", path, err)
	}
	syncDir(s.stateDir)
	fmt.Fprintf(s.warn, "shipkey: %s was damaged (%s); moved it to %s and rebuilt it from %s and the secret files\n",
		displayPath(path), cause.Reason, displayPath(dest), configFileName)
	return nil
}

// runGuarded runs fn (bbolt calls) under guardFaults.
func runGuarded(path string, fn func() error) (err error) {
	defer guardFaults(path, &err)()
	return fn()
}
