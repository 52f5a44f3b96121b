package store

import bolt "go.etcd.io/bbolt"

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
// The pages of state.db that a walk has read are handed back every
// releaseEvery keys (releaseMapped): bbolt reads through a memory map, and a
// page once touched counts in the process's resident memory until unmapped.
// Each key's state record is a B-tree lookup at a random place in the file,
// and Linux maps the 16 pages around each page fault (fault-around, which
// MADV_RANDOM does not turn off), so a walk over 100,000 keys would
// otherwise hold the whole file (84 MB). Released every 1024 keys it holds
// about 20 MB at its peak, every 128 keys about 8 MB, every 32 keys about
// 2 MB, for 1.3x the CPU time of a walk released every 1024 (each key's
// state is then a page fault, and the tree's upper pages fault in again
// after each release; BenchmarkScale in cmd/internal/cli).
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
	// One cursor over the states for every lookup: a Get per key opens the
	// bucket and a cursor each time.
	var sc *bolt.Cursor
	if sb := t.bucket(bucketState); sb != nil {
		sc = sb.Cursor()
	}
	c := b.Cursor()
	n := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if n%releaseEvery == 0 { // from the first key: what was read before is dropped too
			releaseMapped(t.btx)
		}
		n++
		e, err := t.ed.decode(v)
		if err != nil {
			return t.damaged("key " + quoteLabel(string(k)))
		}
		var ks keyState
		if sc != nil {
			if id, sv := sc.Seek([]byte(e.ID)); sv != nil && string(id) == e.ID {
				if ks, err = t.sd.decode(sv); err != nil {
					return t.damaged("state of key id " + quoteLabel(e.ID))
				}
			}
		}
		if err := fn(makeKey(e, ks, def)); err != nil {
			return err
		}
	}
	releaseMapped(t.btx)
	return nil
}

// releaseEvery is how many keys EachKey reads between two releaseMapped.
const releaseEvery = 32
