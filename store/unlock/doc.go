// Package unlock keeps an unlocked identity between processes of one user,
// so that the file backend asks for its passphrase once per session, as
// ssh-agent and gpg-agent do: in the Linux kernel's user keyring (kernel_*.go)
// or in `shipkey agent`, a small process serving it on a unix socket in a
// 0700 directory (agent*.go). It knows nothing of stores: store/session.go
// chooses the mechanism, names the entries and derives what goes in them.
package unlock

import "time"

const (
	// DefaultIdle is how long an unlock lasts without use.
	DefaultIdle = 10 * time.Minute
	// MaxAge bounds an unlock however often it is used (or the idle timeout,
	// when that is longer).
	MaxAge = 2 * time.Hour
)
