package store

// EachKey calls fn for every key in label order, as Keys lists them, one at a
// time from state.db's cursor within one read transaction: memory stays flat
// in the number of keys (keys list and status at 100,000 keys). An error from
// fn ends the walk and is returned. fn must not call back into the store.
func (s *Store) EachKey(fn func(Key) error) error {
	return s.view(func(t *tx) error {
		b := t.bucket(bucketEntries)
		if b == nil {
			return nil
		}
		def := t.defaultLabel()
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
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
