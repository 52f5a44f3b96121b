//go:build !linux

package store

import bolt "go.etcd.io/bbolt"

// releaseMapped does nothing here: MADV_DONTNEED on a shared mapping is only
// a hint outside Linux.
func releaseMapped(*bolt.Tx) {}
