//go:build !linux

package unlock

import (
	"errors"
	"time"

	"filippo.io/age"
)

// Outside Linux there is no kernel keyring: auto keeps an unlock in the agent
// (see session.go).

// KernelSupported: this system has a kernel keyring (Linux only).
const KernelSupported = false

func KernelAvailable() bool { return false }

func KernelLoad(desc string, idle, maxAge time.Duration) (*age.X25519Identity, bool) {
	return nil, false
}

func KernelStore(desc string, ident *age.X25519Identity, idle time.Duration) error {
	return errors.New("no kernel keyring on this platform")
}

func KernelForget(desc string) bool { return false }
