package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// A large walk (each.go) reads three of state.db's buckets whole, in order:
// ids (walkBounds, partitionStates), state (partitionStates) and entries
// (byPartitions). Through bbolt's cursor every page it reads is a page of
// the memory map, and mapping a page of the file costs about 3 µs on a
// virtual machine: at 100,000 keys 25,000 pages, a fifth of a `keys list`.
// A bucketScan reads the same pages with pread from state.db's file
// instead: a branch page names its children, and children at consecutive
// pages (most of them: bbolt writes a transaction's pages in order) are read
// together, up to scanRun bytes at a time, into one buffer used again and
// again. Nothing is mapped, so nothing need be released either.
//
// It is the same snapshot: a walk runs in a read transaction, on state.db
// opened read-only, whose shared file lock (bbolt's flock, with the
// in-process lock of openDB) keeps every writer out until the transaction
// ends. No page of the file changes meanwhile, and pread and the map both
// read the one page cache. The pages are those reachable from the bucket's
// root in this transaction, below its high-water mark.
//
// bbolt's page format (go.etcd.io/bbolt/internal/common/page.go), in the
// machine's byte order: a 16-byte header (id u64, flags u16, count u16,
// overflow u32: the page spans overflow+1 pages), then count elements of 16
// bytes. A branch element is (pos u32, ksize u32, child page u64), a leaf
// element (flags u32, pos u32, ksize u32, vsize u32); an element's key is
// pos bytes past the element, its value right after the key. Every bound is
// checked: a page that is not what its parent says (its id, its kind, an
// element outside it, a child past the high-water mark, a page reached
// twice) ends the scan with errScanDamaged, which the walk reports as a
// damaged state.db (as a bbolt panic on such a page is), never a panic.

// scanRun is the most a bucketScan reads at once; scanGap the most pages
// between two children it reads through rather than read apart (a pread
// costs about what 3 pages more cost).
const (
	scanRun = 256 << 10
	scanGap = 2
)

const (
	pageHeaderSize  = 16
	pageElementSize = 16
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	maxScanDepth    = 32
)

// errScanDamaged is a bucketScan's damaged page; the walk reports it as
// t.damaged.
type errScanDamaged struct{ reason string }

func (e *errScanDamaged) Error() string { return e.reason }

// dbFiles is the file each open state.db reads from (openDB's), by its
// *bolt.DB: a bucketScan reads the very file bbolt has mapped and locked,
// never one put at state.db's path meanwhile.
var dbFiles sync.Map // *bolt.DB -> *os.File

// scanner is a bucketScan over b, or nil when b cannot be read that way (an
// empty store, a write transaction, a bucket small enough to live inside its
// parent's page, no file known): the caller then uses bbolt's cursor.
func (t *tx) scanner(b *bolt.Bucket) *bucketScan {
	if t.btx == nil || b == nil || t.btx.Writable() {
		return nil
	}
	f, ok := dbFiles.Load(t.btx.DB())
	if !ok {
		return nil
	}
	root := uint64(b.Root())
	info := t.btx.DB().Info()
	if root == 0 || info == nil || info.PageSize < pageHeaderSize+pageElementSize {
		return nil
	}
	ps := info.PageSize
	var r io.ReaderAt = f.(*os.File)
	if c := t.s.walkReads; c != nil {
		r = &countingReaderAt{r: r, pageSize: int64(ps), c: c}
	}
	return newBucketScan(r, ps, uint64(t.btx.Size())/uint64(ps), root)
}

// walkReads counts how walks read state.db: the pages they read by pread
// (bucketScan) and in how many reads, the buckets they read in order
// through bbolt's memory map instead, and the states they looked up one by
// one through it. Tests set it (Store.walkReads) to check what a walk
// reads, which the code decides, where a count of the process's page
// faults or resident memory would measure the kernel and the runtime too.
type walkReads struct {
	pages, preads, mappedScans, mappedLookups atomic.Int64
	held                                      atomic.Int64 // the most keys' states a walk held at once
}

// holding notes that a walk holds n keys' states at once.
func (c *walkReads) holding(n int) {
	if c == nil {
		return
	}
	for {
		old := c.held.Load()
		if int64(n) <= old || c.held.CompareAndSwap(old, int64(n)) {
			return
		}
	}
}

// scanned counts a bucket read in order through bbolt's map.
func (c *walkReads) scanned() {
	if c != nil {
		c.mappedScans.Add(1)
	}
}

// lookedUp counts n states looked up through bbolt's map.
func (c *walkReads) lookedUp(n int) {
	if c != nil {
		c.mappedLookups.Add(int64(n))
	}
}

// countingReaderAt counts the pages read through it into c.
type countingReaderAt struct {
	r        io.ReaderAt
	pageSize int64
	c        *walkReads
}

func (r *countingReaderAt) ReadAt(b []byte, off int64) (int, error) {
	r.c.preads.Add(1)
	r.c.pages.Add((int64(len(b)) + r.pageSize - 1) / r.pageSize)
	return r.r.ReadAt(b, off)
}

// bucketScan reads one bucket's key/value pairs in key order by pread, as
// bbolt's cursor yields them (First, Next, Seek). The slices it returns are
// valid until its next call. After the last pair, or an error (Err), it
// yields nil.
type bucketScan struct {
	r        io.ReaderAt
	pageSize int
	pages    uint64 // the transaction's high-water mark
	root     uint64

	stack []scanFrame // the branch pages above the leaf, root first
	leaf  []byte      // the leaf page being read
	li    int         // its element
	ln    int         // its number of elements

	win    []byte // pages [winAt, winAt+winN) of the file
	winAt  uint64
	winN   uint64
	single []byte // a page that does not fit in win

	seen []uint64 // the pages read since First or Seek (a bitmap)
	err  error
}

// scanFrame is a branch page of the path from the root, copied, and the
// child being read.
type scanFrame struct {
	page []byte
	i, n int
}

func newBucketScan(r io.ReaderAt, pageSize int, pages, root uint64) *bucketScan {
	return &bucketScan{r: r, pageSize: pageSize, pages: pages, root: root}
}

// Err is what ended the scan early: *errScanDamaged, or the file's read
// error.
func (s *bucketScan) Err() error { return s.err }

func (s *bucketScan) fail(format string, args ...any) {
	if s.err == nil {
		s.err = &errScanDamaged{reason: fmt.Sprintf(format, args...)}
	}
	s.leaf, s.li, s.ln, s.stack = nil, 0, 0, s.stack[:0]
}

// First is the bucket's first pair.
func (s *bucketScan) First() (key, value []byte) {
	if !s.restart() {
		return nil, nil
	}
	s.descend(s.root, nil, nil)
	return s.settle()
}

// Next is the pair after the last one returned.
func (s *bucketScan) Next() (key, value []byte) {
	if s.leaf == nil {
		return nil, nil
	}
	s.li++
	return s.settle()
}

// Seek is the first pair whose key is seek or after it.
func (s *bucketScan) Seek(seek []byte) (key, value []byte) {
	if !s.restart() {
		return nil, nil
	}
	s.descend(s.root, nil, seek)
	return s.settle()
}

func (s *bucketScan) restart() bool {
	if s.err != nil {
		return false
	}
	s.stack, s.leaf, s.li, s.ln = s.stack[:0], nil, 0, 0
	if n := int((s.pages + 63) / 64); len(s.seen) != n {
		s.seen = make([]uint64, n)
	} else {
		clear(s.seen)
	}
	return true
}

// settle moves on from the leaf's element li to the next that exists (the
// first of the next page that has any) and returns it.
func (s *bucketScan) settle() (key, value []byte) {
	for s.leaf != nil && s.li >= s.ln {
		s.leaf = nil
		for len(s.stack) > 0 {
			top := &s.stack[len(s.stack)-1]
			if top.i++; top.i < top.n {
				s.descend(s.child(top, top.i), top, nil)
				break
			}
			s.stack = s.stack[:len(s.stack)-1]
		}
		if s.leaf == nil {
			return nil, nil // the end, or damage
		}
	}
	if s.leaf == nil {
		return nil, nil
	}
	e := s.leaf[pageHeaderSize+s.li*pageElementSize:]
	flags, pos := s.u32(e), s.u32(e[4:])
	ksize, vsize := s.u32(e[8:]), s.u32(e[12:])
	at := uint64(pageHeaderSize+s.li*pageElementSize) + uint64(pos)
	if flags&bucketLeafFlag != 0 || at+uint64(ksize)+uint64(vsize) > uint64(len(s.leaf)) {
		s.fail("a leaf element out of its page")
		return nil, nil
	}
	k := s.leaf[at : at+uint64(ksize) : at+uint64(ksize)]
	v := s.leaf[at+uint64(ksize) : at+uint64(ksize)+uint64(vsize) : at+uint64(ksize)+uint64(vsize)]
	return k, v
}

// descend reads page id (a child of parent, nil for the root) and the first
// pages under it down to a leaf, each time the child holding seek (nil: the
// first child); the leaf is then s.leaf, at the first element not before
// seek.
func (s *bucketScan) descend(id uint64, parent *scanFrame, seek []byte) {
	for {
		p := s.page(id, parent)
		if p == nil {
			return
		}
		n := int(binary.NativeEndian.Uint16(p[10:]))
		if pageHeaderSize+n*pageElementSize > len(p) {
			s.fail("page %d holds more elements than fit", id)
			return
		}
		if binary.NativeEndian.Uint16(p[8:]) == leafPageFlag {
			s.leaf, s.ln, s.li = p, n, 0
			if seek != nil {
				s.li, _ = s.search(p, n, seek, 4)
			}
			return
		}
		if n == 0 || len(s.stack) == maxScanDepth {
			s.fail("branch page %d is empty or too deep", id)
			return
		}
		if len(s.stack) < cap(s.stack) {
			s.stack = s.stack[:len(s.stack)+1]
		} else {
			s.stack = append(s.stack, scanFrame{})
		}
		f := &s.stack[len(s.stack)-1]
		f.page = append(f.page[:0], p...)
		f.i, f.n = 0, n
		if seek != nil {
			// As bbolt: the child whose range holds seek.
			var exact bool
			if f.i, exact = s.search(f.page, n, seek, 0); !exact {
				f.i = max(0, f.i-1)
			}
		}
		if s.err != nil {
			return
		}
		id, parent = s.child(f, f.i), f
	}
}

// search is the first of page p's n elements whose key is not before seek
// (n: none), by bbolt's binary search (sort.Search's); exact is whether a
// key it compared was seek. An element's key pos is at its byte posAt.
func (s *bucketScan) search(p []byte, n int, seek []byte, posAt int) (i int, exact bool) {
	lo, hi := 0, n
	for lo < hi && s.err == nil {
		m := int(uint(lo+hi) >> 1)
		switch bytes.Compare(s.key(p, m, posAt), seek) {
		case -1:
			lo = m + 1
		case 0:
			exact = true
			hi = m
		default:
			hi = m
		}
	}
	return lo, exact
}

// key is the key of page p's element i (a branch's: posAt 0; a leaf's: 4),
// or nil (and the scan failed) when it lies outside the page.
func (s *bucketScan) key(p []byte, i, posAt int) []byte {
	e := pageHeaderSize + i*pageElementSize
	at := uint64(e) + uint64(s.u32(p[e+posAt:]))
	end := at + uint64(s.u32(p[e+posAt+4:]))
	if end > uint64(len(p)) {
		s.fail("a key out of its page")
		return nil
	}
	return p[at:end]
}

// child is the page id of branch frame f's element i.
func (s *bucketScan) child(f *scanFrame, i int) uint64 {
	return binary.NativeEndian.Uint64(f.page[pageHeaderSize+i*pageElementSize+8:])
}

func (s *bucketScan) u32(b []byte) uint32 { return binary.NativeEndian.Uint32(b) }

// page reads page id, with its overflow, and checks its header; nil when it
// is damaged or does not read (s.err). parent, the branch being read, says
// which pages come next: its children after id that follow it closely are
// read with it.
func (s *bucketScan) page(id uint64, parent *scanFrame) []byte {
	if id < 2 || id >= s.pages {
		s.fail("page %d is outside the file's pages (2 to %d)", id, s.pages)
		return nil
	}
	if s.seen[id/64]&(1<<(id%64)) != 0 {
		s.fail("page %d is reached twice", id)
		return nil
	}
	s.seen[id/64] |= 1 << (id % 64)
	ps := uint64(s.pageSize)
	if (id < s.winAt || id >= s.winAt+s.winN) && !s.readWindow(id, parent) {
		return nil
	}
	p := s.win[(id-s.winAt)*ps:]
	span, ok := s.checkHeader(p, id)
	if !ok {
		return nil
	}
	if id+span <= s.winAt+s.winN {
		return p[: span*ps : span*ps]
	}
	if !s.read(&s.single, id, span) {
		return nil
	}
	return s.single
}

// readWindow reads page id into the window, with the children of parent
// (the branch being read) after id that follow it closely.
func (s *bucketScan) readWindow(id uint64, parent *scanFrame) bool {
	ps := uint64(s.pageSize)
	end := id + 1
	if parent != nil {
		for i := parent.i + 1; i < parent.n; i++ {
			c := s.child(parent, i)
			if c < end || c > end+scanGap || (c+1-id)*ps > scanRun {
				break
			}
			end = c + 1
		}
	}
	end = min(end, s.pages)
	if !s.read(&s.win, id, end-id) {
		s.winN = 0
		return false
	}
	s.winAt, s.winN = id, end-id
	return true
}

// checkHeader checks the header of page id (p, its start): its id, a
// branch or a leaf, within the file's pages; span is its length in pages,
// overflow included.
func (s *bucketScan) checkHeader(p []byte, id uint64) (span uint64, ok bool) {
	span = uint64(binary.NativeEndian.Uint32(p[12:])) + 1
	if binary.NativeEndian.Uint64(p) != id {
		s.fail("page %d says it is page %d", id, binary.NativeEndian.Uint64(p))
		return 0, false
	}
	if f := binary.NativeEndian.Uint16(p[8:]); f != branchPageFlag && f != leafPageFlag {
		s.fail("page %d is neither a branch nor a leaf (flags %#x)", id, f)
		return 0, false
	}
	if span > s.pages-id {
		s.fail("page %d runs past the file's pages", id)
		return 0, false
	}
	return span, true
}

// read reads n pages from page id into *buf.
func (s *bucketScan) read(buf *[]byte, id, n uint64) bool {
	size := int(n) * s.pageSize
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	*buf = (*buf)[:size]
	if _, err := s.r.ReadAt(*buf, int64(id)*int64(s.pageSize)); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			s.fail("page %d is past the file's end", id)
		} else {
			s.err = err
			s.leaf, s.stack = nil, s.stack[:0]
		}
		return false
	}
	return true
}
