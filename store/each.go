package store

import (
	"bytes"
	"cmp"
	"errors"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// EachKey calls fn for every key in label order, as Keys lists them, one at a
// time from state.db's cursor within one read transaction: memory stays flat
// in the number of keys (keys list and status at 100,000 keys). An error from
// fn ends the walk and is returned. fn must not call back into the store,
// nor change the Key's slices (keys decoded in a row share them).
func (s *Store) EachKey(fn func(Key) error) error {
	return s.WalkKeys(func(each func(func(Key) error) error) error { return each(fn) })
}

// WalkKeys runs body with each, a walk over the keys as EachKey makes it,
// which body may call more than once: every walk sees the same keys (one
// read transaction), so a table can measure its columns in one walk and
// write its rows in the next instead of keeping them. body must not call
// back into the store.
//
// A walk reads the keys in chunks of walkChunk, in label order (the
// entries bucket's), each key's definition decoded with its state record
// and handed to fn. The states are kept by key id (the state bucket), in
// another order: looked up in label order, every key's state would be a
// B-tree search at a random place in the file, each a page fault (and
// under memory pressure a read). A store of one chunk looks its states up
// in id order (byLookups), so that one fault serves every key whose state
// sits on the pages it maps. A larger store's chunks would each read most
// of the state bucket's pages again; its walk first partitions the states
// by chunk into a temporary file, reading state.db's pages once, in order
// (partitionStates), then reads the partitions back a chunk at a time. A
// chunk's states (about 300 bytes a key, no pointers) are all a walk
// holds, whatever the number of keys.
//
// A larger store's walk reads its three passes over whole buckets (the ids
// for the chunks' bounds, the ids and states together, the entries) by pread
// from state.db's file (bucketScan, each_scan.go), runs of neighbouring
// pages at once, not through bbolt's memory map: on a virtual machine
// mapping a page of the file costs about 3 µs, reading it by pread in runs
// of several pages about a third of that. At 100,000 keys (150 MB) those
// passes read 27,000 pages (25,000 of the buckets, the ids twice, and the
// few between neighbours) in 3,500 preads: the entries' and ids' leaves lie
// mostly in order, the state bucket's less (its runs are about 4 pages). What bbolt's cursor still reads (a
// small store's walk, the state of a key the ids bucket misses) is handed
// back every releaseEvery keys (releaseMapped): a page once mapped counts in
// the process's resident memory until unmapped, so a walk over 100,000 keys
// would otherwise hold the whole file. BenchmarkScale in cmd/internal/cli
// measures a whole `keys list`; docs/performance.md quotes it.
//
// Damage found part way (a page of state.db that does not read) sets
// state.db aside and rebuilds it, as any damage does, and a read runs again
// on the rebuilt index. A walk that has already handed keys to fn does not:
// it would hand them on twice (a table's rows, keys list --json's
// elements). It ends with ErrWalkInterrupted instead, and the next walk
// reads the rebuilt index whole.
func (s *Store) WalkKeys(body func(each func(func(Key) error) error) error) error {
	handed := false
	return s.view(func(t *tx) error {
		if handed {
			return ErrWalkInterrupted
		}
		return body(func(fn func(Key) error) error {
			return t.eachKey(func(k Key) error {
				handed = true
				return fn(k)
			})
		})
	})
}

// ErrWalkInterrupted ends a walk over the keys that found state.db damaged
// after it had handed keys on: state.db was set aside and rebuilt (a line on
// the store's warnings says so), and the command is to be run again.
var ErrWalkInterrupted = errors.New("the list of keys was cut short: state.db was damaged and has been rebuilt; run the command again")

func (t *tx) eachKey(fn func(Key) error) error {
	b := t.bucket(bucketEntries)
	if b == nil {
		return nil
	}
	j := keyJoin{t: t, def: t.defaultLabel(), fn: fn, chunk: walkChunk}
	if t.s.walkChunk > 0 {
		j.chunk = t.s.walkChunk
	}
	if sb := t.bucket(bucketState); sb != nil {
		j.sc = sb.Cursor()
	}
	releaseMapped(t.btx) // what was read before is dropped too
	ids := t.bucket(bucketIDs)
	if j.sc == nil || ids == nil {
		return j.byLookups(b)
	}
	bounds, err := walkBounds(t, b, ids, j.chunk)
	if err != nil || len(bounds) == 0 {
		return cmp.Or(err, j.byLookups(b)) // one chunk: its lookups touch no page twice
	}
	temp := t.s.walkTemp
	if temp == nil {
		temp = walkTempFile
	}
	p, err := partitionStates(t, ids, t.bucket(bucketState), bounds, temp)
	var dmg *DamagedDBError
	if errors.As(err, &dmg) {
		return err
	}
	if err != nil {
		return j.byLookups(b) // no temporary file: the walk of before
	}
	defer p.close()
	return j.byPartitions(b, p)
}

// walkCursor is how a walk reads a bucket in order: a bucketScan (by pread,
// each_scan.go) or, where there is none, bbolt's cursor. What it returns is
// valid until its next call.
type walkCursor interface {
	First() (key, value []byte)
	Next() (key, value []byte)
	Seek(seek []byte) (key, value []byte)
}

// walkCursor reads b by a bucketScan where it can, else by bbolt's cursor.
func (t *tx) walkCursor(b *bolt.Bucket) walkCursor {
	if s := t.scanner(b); s != nil {
		return s
	}
	t.s.walkReads.scanned()
	return b.Cursor()
}

// walkDone is what ended a walk over c early, if anything (a bucketScan's
// damaged page or read error), said of bucket name; bbolt's cursor panics
// instead (runGuarded).
func (t *tx) walkDone(c walkCursor, name []byte) error {
	s, ok := c.(*bucketScan)
	if !ok || s.err == nil {
		return nil
	}
	if d := (*errScanDamaged)(nil); errors.As(s.err, &d) {
		return t.damaged("bucket " + string(name) + ": " + d.reason)
	}
	return fileError("read", t.s.dbPath(), s.err)
}

// mapped reports whether reading by any of cs maps state.db's pages (bbolt's
// cursor): then releaseMapped hands them back.
func mapped(cs ...walkCursor) bool {
	for _, c := range cs {
		if _, ok := c.(*bolt.Cursor); ok {
			return true
		}
	}
	return false
}

// keyJoin hands fn each definition of the entries bucket, in label order,
// with its state record.
type keyJoin struct {
	t     *tx
	def   string
	fn    func(Key) error
	sc    *bolt.Cursor // the state bucket's; nil: no state
	chunk int          // keys read at once (walkChunk)
}

// entry decodes the definition of the key labelled label.
func (j *keyJoin) entry(label, def []byte) (keyEntry, error) {
	e, err := j.t.ed.decode(def)
	if err != nil {
		return keyEntry{}, j.t.damaged("key " + quoteLabel(string(label)))
	}
	return e, nil
}

// emit decodes e's state record (ok false: none) and hands on the key.
func (j *keyJoin) emit(e keyEntry, state []byte, ok bool) error {
	var ks keyState
	if ok {
		var err error
		if ks, err = j.t.sd.decode(state); err != nil {
			return j.t.damaged("state of key id " + quoteLabel(e.ID))
		}
	}
	return j.fn(makeKey(e, ks, j.def))
}

// byLookups is the walk of a small store, or of one with no temporary
// file: a chunk of keys at a time, their states looked up in id
// order (walkChunkBuf.readStates).
func (j *keyJoin) byLookups(b *bolt.Bucket) error {
	btx := j.t.btx
	var w walkChunkBuf
	ec, dc := b.Cursor(), b.Cursor()
	j.t.s.walkReads.scanned()
	j.t.s.walkReads.scanned()
	k, v := ec.First()
	dk, dv := dc.First()
	for k != nil {
		w.reset()
		for ; k != nil && len(w.rows) < j.chunk; k, v = ec.Next() {
			if len(w.rows)%lookupReleaseEvery == lookupReleaseEvery-1 {
				releaseMapped(btx)
			}
			id, err := j.t.ed.decodeID(v)
			if err != nil {
				return j.t.damaged("key " + quoteLabel(string(k)))
			}
			w.addID(id)
		}
		releaseMapped(btx)
		if j.sc != nil {
			j.t.s.walkReads.lookedUp(len(w.byID))
			j.t.s.walkReads.holding(len(w.rows))
			w.readStates(j.sc, func() { releaseMapped(btx) })
			releaseMapped(btx)
		}
		for i := range w.rows {
			if i%lookupReleaseEvery == lookupReleaseEvery-1 {
				releaseMapped(btx)
			}
			e, err := j.entry(dk, dv)
			if err != nil {
				return err
			}
			st, ok := w.state(i)
			if err := j.emit(e, st, ok); err != nil {
				return err
			}
			dk, dv = dc.Next()
		}
		releaseMapped(btx)
	}
	return nil
}

// byPartitions is the walk of a large store: the states, partitioned by
// the label range of their keys' chunks (partitionStates), are read back a
// chunk at a time, sorted by label, and joined with the definitions.
func (j *keyJoin) byPartitions(b *bolt.Bucket, p *statePartitions) error {
	btx := j.t.btx
	var c partChunk
	part := -1
	n, lookups := 0, 0
	dc := j.t.walkCursor(b)
	release := mapped(dc)
	for dk, dv := dc.First(); dk != nil; dk, dv = dc.Next() {
		for part < 0 || (part < len(p.bounds) && bytes.Compare(dk, p.bounds[part]) >= 0) {
			part++
			if err := c.load(p, part); err != nil {
				return err
			}
			j.t.s.walkReads.holding(c.n)
		}
		if n++; release && n%releaseEvery == 0 {
			releaseMapped(btx)
		}
		e, err := j.entry(dk, dv)
		if err != nil {
			return err
		}
		st, ok, found := c.state(e.ID)
		if !found {
			// The ids bucket does not name this key's id under its label
			// (a damaged index): look its state up.
			st, ok = lookupState(j.sc, e.ID)
			j.t.s.walkReads.lookedUp(1)
			if lookups++; lookups%lookupReleaseEvery == 0 {
				releaseMapped(btx)
			}
		}
		if err := j.emit(e, st, ok); err != nil {
			return err
		}
	}
	if release || lookups > 0 {
		releaseMapped(btx)
	}
	return j.t.walkDone(dc, bucketEntries)
}

// lookupState is the state record of id, if any.
func lookupState(sc *bolt.Cursor, id string) ([]byte, bool) {
	k, v := sc.Seek([]byte(id))
	if k != nil && string(k) == id {
		return v, true
	}
	return nil, false
}

// walkBounds returns the first label of every chunk of keys but the first
// (copies, in order); none when the keys fit in one chunk. It reads the
// labels from the ids bucket (id -> label, 1/7 of the entries bucket's
// pages at 100,000 keys) and keeps a sample of them, every label whose hash
// (sampleHash) falls on one in sampleEvery: sorted, every chunk/sampleEvery-th
// sample begins a chunk. A chunk is then about walkChunk keys (256 samples
// a chunk: a few percent either way), and the walk reads the entries
// bucket once, not twice; a bound only says which partition a state goes
// to, so the keys and their order do not depend on it. Labels that the hash
// keeps too few of (a quarter of the expected sample: chosen against it, or
// a damaged ids bucket) get exact bounds from the entries bucket instead
// (chunkBounds): a chunk's states are what a walk holds, and uneven chunks
// would hold more.
func walkBounds(t *tx, entries, ids *bolt.Bucket, chunk int) ([][]byte, error) {
	every := uint64(max(1, chunk/256))
	var sample [][]byte
	n := 0
	ic := t.walkCursor(ids)
	release := mapped(ic)
	for k, label := ic.First(); k != nil; k, label = ic.Next() {
		if sampleHash(label)%every == 0 {
			sample = append(sample, bytes.Clone(label))
		}
		if n++; release && n%(4*releaseEvery) == 0 {
			releaseMapped(t.btx)
		}
	}
	if release {
		releaseMapped(t.btx)
	}
	if err := t.walkDone(ic, bucketIDs); err != nil {
		return nil, err
	}
	if n <= chunk {
		return nil, nil
	}
	if uint64(len(sample)) < uint64(n)/every/4 {
		return chunkBounds(t, entries, chunk)
	}
	slices.SortFunc(sample, bytes.Compare)
	var bounds [][]byte
	step := max(1, chunk/int(every))
	for i := step; i < len(sample); i += step {
		bounds = append(bounds, sample[i])
	}
	return bounds, nil
}

// sampleHash is a label's 64-bit FNV-1a hash with a final mix (MurmurHash3's),
// so that its low bits vary with every byte of the label: the same on
// every run, so a walk's chunks are too.
func sampleHash(label []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range label {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// chunkBounds reads the entries bucket's labels and returns the first label
// of every chunk of keys but the first (copies); none when the keys fit in
// one chunk.
func chunkBounds(t *tx, entries *bolt.Bucket, chunk int) ([][]byte, error) {
	var bounds [][]byte
	n := 0
	c := t.walkCursor(entries)
	release := mapped(c)
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if n > 0 && n%chunk == 0 {
			bounds = append(bounds, bytes.Clone(k))
		}
		if n++; release && n%(4*releaseEvery) == 0 {
			releaseMapped(t.btx)
		}
	}
	if release {
		releaseMapped(t.btx)
	}
	return bounds, t.walkDone(c, bucketEntries)
}

// walkChunkBuf holds a chunk of a walk: its keys' ids and raw state
// records, in two byte buffers reused from chunk to chunk.
type walkChunkBuf struct {
	ids, states []byte
	rows        []walkRow
	byID        []int32
}

// walkRow is one key of a chunk: where its id and its state record sit in
// the buffers, and whether it has a state record.
type walkRow struct {
	idStart, idEnd, stateStart, stateEnd int32
	hasState                             bool
}

func (w *walkChunkBuf) reset() {
	w.ids, w.states, w.rows, w.byID = w.ids[:0], w.states[:0], w.rows[:0], w.byID[:0]
}

func (w *walkChunkBuf) addID(id string) {
	w.byID = append(w.byID, int32(len(w.rows)))
	w.rows = append(w.rows, walkRow{idStart: int32(len(w.ids)), idEnd: int32(len(w.ids) + len(id))})
	w.ids = append(w.ids, id...)
}

func (w *walkChunkBuf) id(i int32) []byte { return w.ids[w.rows[i].idStart:w.rows[i].idEnd] }

// readStates copies the chunk's state records from sc, in id order,
// calling release every lookupReleaseEvery lookups.
func (w *walkChunkBuf) readStates(sc *bolt.Cursor, release func()) {
	slices.SortFunc(w.byID, func(a, b int32) int { return bytes.Compare(w.id(a), w.id(b)) })
	var k, v []byte
	for n, i := range w.byID {
		if n%lookupReleaseEvery == lookupReleaseEvery-1 {
			release()
		}
		id := w.id(i)
		// The next id is most often a few records on: step there, and
		// search from the root only for a longer way.
		for step := 0; k != nil && bytes.Compare(k, id) < 0; step++ {
			if step == 8 {
				k = nil
				break
			}
			k, v = sc.Next()
		}
		if k == nil || bytes.Compare(k, id) < 0 {
			k, v = sc.Seek(id)
		}
		if k != nil && bytes.Equal(k, id) {
			r := &w.rows[i]
			r.stateStart = int32(len(w.states))
			w.states = append(w.states, v...)
			r.stateEnd, r.hasState = int32(len(w.states)), true
		}
	}
}

// state is the i-th key's raw state record; ok is false when it has none.
func (w *walkChunkBuf) state(i int) (rec []byte, ok bool) {
	r := w.rows[i]
	if !r.hasState {
		return nil, false
	}
	return w.states[r.stateStart:r.stateEnd:r.stateEnd], true
}

// walkChunk is how many keys a walk reads at once, releaseEvery how many
// it reads in order by bbolt's cursor between two releaseMapped,
// lookupReleaseEvery how many states it looks up (byLookups: each lookup
// may map a page of its own, and the 64 KB around it). At 100,000 keys
// (BenchmarkScale) a `keys list` that partitions its states, reading
// state.db by pread, holds about 24 MB at its peak (12 MB of it the
// program's own floor) and makes 3,400-4,000 page faults, its own memory's
// (6,600-6,900 through the map, released every 1024 keys; 20,000 looking
// states up chunk by chunk, released every 256 keys). Chunks of 16384 hold
// 12 MB more, of 4096 3 MB less, for about the same faults.
const (
	walkChunk          = 8192
	releaseEvery       = 1024
	lookupReleaseEvery = 256
)
