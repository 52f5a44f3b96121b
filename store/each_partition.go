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
// the state bucket together, both in id order, appends each key's label, id
// and raw state record to its chunk's partition in an unlinked temporary
// file. The walk then reads the partitions back one at a time, in label
// order, sorts each by label, and joins it with the definitions. Every page
// of state.db is then read once, in order, where looking each chunk's states
// up in the state bucket reads half of its pages again for every chunk (at
// 100,000 keys, 12 passes over 45 MB, and a page fault for most pages each
// time). The file holds what state.db holds (labels, ids, timings, masked
// tokens, the backend's name), never a secret.

// partBuf is how many bytes of a partition are kept before they are
// written to the file.
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
	for i := range p.bufs {
		if err := p.flush(i); err != nil {
			p.close()
			return nil, err
		}
		p.bufs[i] = nil
		size := 0
		for _, x := range p.extents[i] {
			size += int(x.n)
		}
		p.largest.size = max(p.largest.size, size)
		p.largest.count = max(p.largest.count, p.counts[i])
	}
	return p, nil
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

// add appends a record: label, id, and the state record with 1 added to
// its length (0: none), each length a uvarint.
func (p *statePartitions) add(label, id, state []byte, has bool) error {
	i := p.partition(label)
	p.counts[i]++
	b := p.bufs[i]
	b = binary.AppendUvarint(b, uint64(len(label)))
	b = append(b, label...)
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

// partChunk is one partition read back: its records in buf, found by
// label through a hash table (a chunk's records come in id order).
type partChunk struct {
	buf   []byte
	rows  []partRow
	table []int32 // open addressing, by the label's hash: a row's index + 1; 0 is free
	seed  maphash.Seed
}

// partRow is where a record's parts sit in partChunk.buf.
type partRow struct {
	label, id, state [2]int32
	has              bool
}

var errPartition = errors.New("store: a walk's temporary file does not read back as written")

// load reads partition i into c. Its buffers are made once, for the
// largest partition.
func (c *partChunk) load(p *statePartitions, i int) error {
	if c.buf == nil {
		c.buf = make([]byte, 0, p.largest.size)
		c.rows = make([]partRow, 0, p.largest.count)
		size := 16
		for size < 2*p.largest.count {
			size *= 2
		}
		c.table = make([]int32, size)
		c.seed = maphash.MakeSeed()
	}
	c.rows = c.rows[:0]
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
	for b := 0; b < len(c.buf); {
		var r partRow
		var ok bool
		if r.label, b, ok = c.field(b, false); !ok {
			return errPartition
		}
		if r.id, b, ok = c.field(b, false); !ok {
			return errPartition
		}
		if r.state, b, ok = c.field(b, true); !ok {
			return errPartition
		}
		r.has = r.state[0] >= 0
		c.rows = append(c.rows, r)
	}
	clear(c.table)
	mask := uint64(len(c.table) - 1)
	for i, r := range c.rows {
		h := maphash.Bytes(c.seed, c.part(r.label)) & mask
		for c.table[h] != 0 {
			h = (h + 1) & mask
		}
		c.table[h] = int32(i) + 1
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

// state is the state record of the key labelled label with id id (ok false:
// none); found is false when the partition has no record of that key.
func (c *partChunk) state(label []byte, id string) (state []byte, ok, found bool) {
	if len(c.rows) == 0 {
		return nil, false, false
	}
	mask := uint64(len(c.table) - 1)
	for h := maphash.Bytes(c.seed, label) & mask; c.table[h] != 0; h = (h + 1) & mask {
		r := c.rows[c.table[h]-1]
		if !bytes.Equal(c.part(r.label), label) || string(c.part(r.id)) != id {
			continue
		}
		if !r.has {
			return nil, false, true
		}
		return c.part(r.state), true, true
	}
	return nil, false, false
}
