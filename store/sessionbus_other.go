//go:build !linux

package store

import "time"

const sessionBusTimeout = 300 * time.Millisecond

// sessionBusCheck is nil outside Linux: the OS keyring there (Keychain,
// Credential Manager) needs no session bus.
func sessionBusCheck(time.Duration) error { return nil }
