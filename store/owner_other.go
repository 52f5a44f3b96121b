//go:build !unix

package store

import "io/fs"

func effectiveUID() (uint32, bool)        { return 0, false }
func ownerUID(fs.FileInfo) (uint32, bool) { return 0, false }
