package store

// EachKey calls fn for every key in label order, as Keys lists them, one at a
// time from state.db's cursor within one read transaction: memory stays flat
// in the number of keys (keys list and status at 100,000 keys). An error from
// fn ends the walk and is returned. fn must not call back into the store, nor
// keep the Key's byte-backed fields past its call.
//
// The pages of state.db that the walk has read are handed back every
// releaseEvery keys (releaseMapped): bbolt reads through a memory map, and a
// page once touched counts in the process's resident memory until unmapped,
// so a walk over 100,000 keys would otherwise hold the whole file (78 MB).
func (s *Store) EachKey(fn func(Key) error) error {
	return s.view(func(t *tx) error {
		b := t.bucket(bucketEntries)
		if b == nil {
			return nil
		}
		def := t.defaultLabel()
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
			key, err := t.key(e, def)
			if err != nil {
				return err
			}
			if err := fn(key); err != nil {
				return err
			}
		}
		return nil
	})
}

// releaseEvery is how many keys EachKey reads between two releaseMapped.
const releaseEvery = 1024
