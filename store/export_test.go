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
