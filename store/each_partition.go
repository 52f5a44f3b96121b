package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// A walk over more keys than a chunk (walkChunk) partitions the state
// records by chunk first: one pass over the ids bucket (id -> label) and
// the state bucket together, both in id order, appends each key's id and
// raw state record to the partition of its label's chunk in an unlinked
// temporary file. The walk then reads the partitions back one at a time, in
// label order, and joins each with the definitions by id (a hash table,
// partChunk). Every page
// of state.db is then read once, in order, where looking each chunk's states
// up in the state bucket reads half of its pages again for every chunk (at
// 100,000 keys, 12 passes over 45 MB, and a page fault for most pages each
// time). The file holds what state.db holds (ids, timings, masked
// tokens, the backend's name), never a secret.

// partBuf is how many bytes of a partition are kept before they are
// written to the file (and read back at once): at 100,000 keys 13
// partitions, 30 MB, written and read in about 930 pieces each way. 128
// KiB would save 700 writes and reads (a few ms) but hold 4 times as much
// while partitioning, memory a walk of many partitions faults in anew
// (TestEachKeyReadsStatePagesOnce: 0.58 faults a key under -race, 0.14 at
// 32 KiB).
const partBuf = 32 << 10

// statePartitions is the temporary file of a walk's partitions.
type statePartitions struct {
	f       *os.File
	bounds  [][]byte                  // the first label of each chunk but the first
	extents [][]extent                // each partition's pieces in f, in order
	counts  []int                     // each partition's number of records
	largest struct{ size, count int } // of any partition
	bufs    [][]byte                  // each partition's bytes not yet written
	size    int64                     // bytes written to f
}

type extent struct{ off, n int64 }

// walkTempFile makes the temporary file of a walk's partitions.
func walkTempFile() (*os.File, error) { return ScratchFile("shipkey-walk-*") }

// ScratchFile is a new temporary file (os.CreateTemp's pattern) already
// removed from its directory: it lives until closed, and nothing is left
// behind by a kill. For what a listing keeps past its memory (a walk's
// states, a table's rows): never a secret.
func ScratchFile(pattern string) (*os.File, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// partitionStates writes every key's state record (or that it has none)
// to the partition of its label's chunk, reading ic (the ids bucket) and sc
// (the state bucket) in id order.
func partitionStates(t *tx, ids, states *bolt.Bucket, bounds [][]byte, temp func() (*os.File, error)) (*statePartitions, error) {
	f, err := temp()
	if err != nil {
		return nil, err
	}
	btx := t.btx
	p := &statePartitions{f: f, bounds: bounds, extents: make([][]extent, len(bounds)+1), counts: make([]int, len(bounds)+1), bufs: make([][]byte, len(bounds)+1)}
	ic, sc := t.walkCursor(ids), t.walkCursor(states)
	release := mapped(ic, sc)
	sk, sv := sc.First()
	n := 0
	for id, label := ic.First(); id != nil; id, label = ic.Next() {
		if n++; release && n%releaseEvery == 0 {
			releaseMapped(btx)
		}
		// Most often the state record is the next one (ids and states have
		// the same keys); search from the root only for a longer way.
		for step := 0; sk != nil && bytes.Compare(sk, id) < 0; step++ {
			if step == 8 {
				sk, sv = sc.Seek(id)
				break
			}
			sk, sv = sc.Next()
		}
		var state []byte
		has := sk != nil && bytes.Equal(sk, id)
		if has {
			state = sv
		}
		if err := p.add(label, id, state, has); err != nil {
			releaseMapped(btx)
			p.close()
			return nil, err
		}
	}
	if release {
		releaseMapped(btx)
	}
	if err := cmp.Or(t.walkDone(ic, bucketIDs), t.walkDone(sc, bucketState)); err != nil {
		p.close()
		return nil, err
	}
	if err := p.finish(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// finish writes what each partition still buffers and notes the largest
// partition's size and count.
func (p *statePartitions) finish() error {
	for i := range p.bufs {
		if err := p.flush(i); err != nil {
			return err
		}
		p.bufs[i] = nil
		size := 0
		for _, x := range p.extents[i] {
			size += int(x.n)
		}
		p.largest.size = max(p.largest.size, size)
		p.largest.count = max(p.largest.count, p.counts[i])
	}
	return nil
}

// partition is the index of the chunk that label belongs to.
func (p *statePartitions) partition(label []byte) int {
	i, _ := slices.BinarySearchFunc(p.bounds, label, func(b, l []byte) int {
		if bytes.Compare(b, l) <= 0 {
			return -1
		}
		return 1
	})
	return i
}

// add appends a record to the partition of label: id, and the state record
// with 1 added to its length (0: none), each length a uvarint.
func (p *statePartitions) add(label, id, state []byte, has bool) error {
	i := p.partition(label)
	p.counts[i]++
	b := p.bufs[i]
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	if has {
		b = binary.AppendUvarint(b, uint64(len(state))+1)
		b = append(b, state...)
	} else {
		b = append(b, 0)
	}
	p.bufs[i] = b
	if len(b) >= partBuf {
		return p.flush(i)
	}
	return nil
}

// flush writes partition i's pending bytes to the file.
func (p *statePartitions) flush(i int) error {
	b := p.bufs[i]
	if len(b) == 0 {
		return nil
	}
	if _, err := p.f.Write(b); err != nil {
		return err
	}
	p.extents[i] = append(p.extents[i], extent{off: p.size, n: int64(len(b))})
	p.size += int64(len(b))
	p.bufs[i] = b[:0]
	return nil
}

func (p *statePartitions) close() { _ = p.f.Close() }

// partChunk is one partition read back: its records in buf, found by id
// through a hash table (a chunk's records come in id order, its keys in
// label order).
type partChunk struct {
	buf []byte
	n   int // records in buf
	// table is open addressing by the id's hash: the hash's top 32 bits
	// and, below, where the record begins in buf + 1; 0 is free. A probe
	// reads buf (a cache miss, most often) only when the top bits match.
	table []uint64
	seed  maphash.Seed
}

var errPartition = errors.New("store: a walk's temporary file does not read back as written")

// load reads partition i into c. Its buffers are made once, for the
// largest partition.
func (c *partChunk) load(p *statePartitions, i int) error {
	if c.buf == nil {
		c.buf = make([]byte, 0, p.largest.size)
		size := 16
		for size < 2*p.largest.count {
			size *= 2
		}
		c.table = make([]uint64, size)
		c.seed = maphash.MakeSeed()
	}
	c.buf, c.n = c.buf[:0], 0
	if i >= len(p.extents) {
		return nil
	}
	var size int64
	for _, x := range p.extents[i] {
		size += x.n
	}
	c.buf = c.buf[:size]
	for b := c.buf; len(p.extents[i]) > 0; p.extents[i] = p.extents[i][1:] {
		x := p.extents[i][0]
		if _, err := p.f.ReadAt(b[:x.n], x.off); err != nil {
			return err
		}
		b = b[x.n:]
	}
	clear(c.table)
	mask := uint64(len(c.table) - 1)
	for b := 0; b < len(c.buf); c.n++ {
		id, next, ok := c.field(b, false)
		if !ok || c.n == p.counts[i] {
			return errPartition
		}
		if _, next, ok = c.field(next, true); !ok {
			return errPartition
		}
		hash := maphash.Bytes(c.seed, c.part(id))
		h := hash & mask
		for c.table[h] != 0 {
			h = (h + 1) & mask
		}
		c.table[h] = hash&^(1<<32-1) | uint64(b+1)
		b = next
	}
	return nil
}

// field reads a length-prefixed field at b and returns its bounds and where
// the next begins; with plusOne its length has 1 added, and 0 is none
// (bounds -1).
func (c *partChunk) field(b int, plusOne bool) ([2]int32, int, bool) {
	n, k := binary.Uvarint(c.buf[b:])
	if k <= 0 {
		return [2]int32{}, 0, false
	}
	b += k
	if plusOne {
		if n == 0 {
			return [2]int32{-1, -1}, b, true
		}
		n--
	}
	if n > uint64(len(c.buf)-b) {
		return [2]int32{}, 0, false
	}
	return [2]int32{int32(b), int32(b + int(n))}, b + int(n), true
}

func (c *partChunk) part(r [2]int32) []byte { return c.buf[r[0]:r[1]:r[1]] }

// state is the state record of the key with id id (ok false: none); found
// is false when the partition has no record of that id: the ids bucket
// names it under another label, or not at all.
func (c *partChunk) state(id string) (state []byte, ok, found bool) {
	if c.n == 0 {
		return nil, false, false
	}
	mask := uint64(len(c.table) - 1)
	hash := maphash.String(c.seed, id)
	for h := hash & mask; c.table[h] != 0; h = (h + 1) & mask {
		e := c.table[h]
		if e>>32 != hash>>32 {
			continue
		}
		// The record was read whole by load.
		at, next, _ := c.field(int(uint32(e)-1), false)
		if string(c.part(at)) != id {
			continue
		}
		st, _, _ := c.field(next, true)
		if st[0] < 0 {
			return nil, false, true
		}
		return c.part(st), true, true
	}
	return nil, false, false
}
