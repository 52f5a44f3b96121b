//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

func effectiveUID() (uint32, bool) { return uint32(os.Geteuid()), true }

func ownerUID(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
