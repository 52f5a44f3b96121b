package store

import (
	"errors"
	"fmt"
	"os"
)

// Stamp identifies the store's content at a moment: two equal stamps mean no
// shipkey process changed a key, its label, its tokens or its Last Used in
// between. It costs a few stat calls, so the app can compare stamps on every
// tick to see what other shipkey processes changed.
type Stamp string

// Stamp returns the store's current stamp.
func (s *Store) Stamp() (Stamp, error) {
	var b []byte
	for _, p := range []string{s.configPath(), s.statePath()} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			b = append(b, '-', ';')
			continue
		}
		if err != nil {
			return "", fileError("stat", p, err)
		}
		b = fmt.Appendf(b, "%d:%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return Stamp(b), nil
}
