//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// fileIdentity is the file's inode number: a file replaced by a rename has
// another one.
func fileIdentity(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
