//go:build !linux

package store

import "filippo.io/age"

// Outside Linux there is no kernel keyring: every process unwraps the file
// backend's identity once.

func kernelCacheLoad(desc, pass string) (*age.X25519Identity, bool) { return nil, false }
func kernelCacheStore(desc, pass string, ident *age.X25519Identity) {}
func kernelCacheForget(desc string)                                 {}
