//go:build !linux

package store

import (
	"errors"
	"time"

	"filippo.io/age"
)

// Outside Linux there is no kernel keyring: auto keeps an unlock in the agent
// (see session.go).

func kernelCacheAvailable() bool { return false }

func kernelCacheLoad(desc string, idle, maxAge time.Duration) (*age.X25519Identity, bool) {
	return nil, false
}

func kernelCacheStore(desc string, ident *age.X25519Identity, idle time.Duration) error {
	return errors.New("no kernel keyring on this platform")
}

func kernelCacheForget(desc string) bool { return false }
