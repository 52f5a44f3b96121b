//go:build !linux

package cli

// forgetIdentityCache is a no-op: the identity cache is Linux-only.
func forgetIdentityCache(string) {}

// kernelKeyringWorks is false: the kernel keyring is Linux-only.
func kernelKeyringWorks() bool { return false }
