package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// haveSyncFS: a batch of files is made durable by one syncfs(2).
const haveSyncFS = true

func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
