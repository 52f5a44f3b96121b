package store

import "os"

// SetWalkChunk makes s's walks over the keys (EachKey) read n keys at once,
// as a store of n*k keys would be read k chunks at a time.
func SetWalkChunk(s *Store, n int) { s.walkChunk = n }

// NoWalkTempFile makes s's walks find no temporary file, as where none can
// be made.
func NoWalkTempFile(s *Store) {
	s.walkTemp = func() (*os.File, error) { return nil, os.ErrPermission }
}

// WalkReads is what s's walks read of state.db since CountWalkReads.
type WalkReads struct {
	Pages, Preads, MappedScans, MappedLookups int64
	Held                                      int64 // the most keys' states held at once
}

// CountWalkReads makes s count what its walks read of state.db; the
// function returns the counts so far.
func CountWalkReads(s *Store) func() WalkReads {
	c := &walkReads{}
	s.walkReads = c
	return func() WalkReads {
		return WalkReads{c.pages.Load(), c.preads.Load(), c.mappedScans.Load(), c.mappedLookups.Load(), c.held.Load()}
	}
}

// WalkedBucketPages is the number of pages of the buckets a large walk reads
// whole (entries, ids and state), each bucket's branches, leaves and their
// overflow, by name.
func WalkedBucketPages(s *Store) (map[string]int64, error) {
	pages := map[string]int64{}
	err := s.view(func(t *tx) error {
		for _, name := range [][]byte{bucketEntries, bucketIDs, bucketState} {
			if b := t.bucket(name); b != nil {
				st := b.Stats()
				pages[string(name)] = int64(st.BranchPageN + st.BranchOverflowN + st.LeafPageN + st.LeafOverflowN)
			}
		}
		return nil
	})
	return pages, err
}
