package store

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMapped drops this process's page table entries for the part of
// state.db that tx can see (madvise MADV_DONTNEED). The map is a read-only
// shared mapping of the file, so nothing is lost: the pages stay in the page
// cache and a later read faults them back in. It only keeps them from
// counting as this process's memory.
func releaseMapped(tx *bolt.Tx) {
	info := tx.DB().Info()
	if info == nil || info.Data == 0 || tx.Writable() {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(tx.Size()), unix.MADV_DONTNEED)
}
