package store

import (
	"bytes"
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
// A walk reads the keys in chunks of walkChunk, in three steps: the chunk's
// key ids in label order (the entries bucket's order), then their state
// records in id order (the state bucket's), copied raw into one buffer,
// then the definitions again in label order, each decoded with its state
// and handed to fn. Looked up in label order, every key's state would be
// a B-tree search at a random place in the file, each a page fault (and
// under memory pressure a read); in id order the lookups move forward
// through the file and one fault serves every key whose state sits on the
// pages it maps. A chunk's ids and raw states (about 300 bytes a key, no
// pointers) are all a walk holds, whatever the number of keys.
//
// The pages of state.db that a walk has read are handed back every
// releaseEvery keys of each step (releaseMapped): bbolt reads through a
// memory map, and a page once touched counts in the process's resident
// memory until unmapped, so a walk over 100,000 keys would otherwise hold
// the whole file. BenchmarkScale in cmd/internal/cli measures a whole
// `keys list`; the README quotes it.
func (s *Store) WalkKeys(body func(each func(func(Key) error) error) error) error {
	return s.view(func(t *tx) error {
		return body(func(fn func(Key) error) error { return t.eachKey(fn) })
	})
}

func (t *tx) eachKey(fn func(Key) error) error {
	b := t.bucket(bucketEntries)
	if b == nil {
		return nil
	}
	def := t.defaultLabel()
	var sc *bolt.Cursor
	if sb := t.bucket(bucketState); sb != nil {
		sc = sb.Cursor()
	}
	var w walkChunkBuf
	releaseMapped(t.btx) // what was read before is dropped too
	ec, dc := b.Cursor(), b.Cursor()
	k, v := ec.First()
	dk, dv := dc.First()
	for k != nil {
		w.reset()
		for ; k != nil && len(w.rows) < walkChunk; k, v = ec.Next() {
			if len(w.rows)%releaseEvery == releaseEvery-1 {
				releaseMapped(t.btx)
			}
			id, err := t.ed.decodeID(v)
			if err != nil {
				return t.damaged("key " + quoteLabel(string(k)))
			}
			w.addID(id)
		}
		releaseMapped(t.btx)
		if sc != nil {
			w.readStates(sc, func() { releaseMapped(t.btx) })
			releaseMapped(t.btx)
		}
		for i := range w.rows {
			if i%releaseEvery == releaseEvery-1 {
				releaseMapped(t.btx)
			}
			e, err := t.ed.decode(dv)
			if err != nil {
				return t.damaged("key " + quoteLabel(string(dk)))
			}
			var ks keyState
			if st, ok := w.state(i); ok {
				if ks, err = t.sd.decode(st); err != nil {
					return t.damaged("state of key id " + quoteLabel(e.ID))
				}
			}
			if err := fn(makeKey(e, ks, def)); err != nil {
				return err
			}
			dk, dv = dc.Next()
		}
		releaseMapped(t.btx)
	}
	return nil
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
// calling release every releaseEvery lookups.
func (w *walkChunkBuf) readStates(sc *bolt.Cursor, release func()) {
	slices.SortFunc(w.byID, func(a, b int32) int { return bytes.Compare(w.id(a), w.id(b)) })
	var k, v []byte
	for n, i := range w.byID {
		if n%releaseEvery == releaseEvery-1 {
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
// it reads between two releaseMapped. At 100,000 keys (BenchmarkScale) a
// walk of 8192-key chunks makes a tenth of the page faults of lookups in
// label order, and holds about 30 MB at its peak (12 MB of it the
// program's own floor); chunks of 16384 save another 15% of the faults for
// 5 MB more, of 4096 cost 40% more faults for 3 MB less.
const (
	walkChunk    = 8192
	releaseEvery = 256
)
