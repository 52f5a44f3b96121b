package store

import (
	"context"
	"errors"
	"os"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Stamp identifies the store's content at a moment: two equal stamps mean no
// shipkey process changed a key, its label, its tokens or its Last Used in
// between. It is config.toml's fingerprint and the id of state.db's last
// transaction (every write of any kind commits one), so it costs a stat and
// the read of a meta page whatever the number of keys: the app compares
// stamps on every tick to see what other shipkey processes changed.
type Stamp string

// Stamp returns the store's current stamp.
func (s *Store) Stamp() (Stamp, error) {
	fp, err := configFingerprint(s.configPath())
	if err != nil {
		return "", err
	}
	b := append([]byte(fp), ';')
	db, done, err := s.openDB(context.Background(), false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b = append(b, '-')
	case err != nil:
		return "", err
	default:
		err = db.View(func(tx *bolt.Tx) error {
			b = strconv.AppendInt(b, int64(tx.ID()), 10)
			return nil
		})
		done()
		if err != nil {
			return "", err
		}
	}
	return Stamp(b), nil
}
