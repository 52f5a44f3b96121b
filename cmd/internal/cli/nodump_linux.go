//go:build linux

package cli

import "golang.org/x/sys/unix"

// noCoreDump marks this process not dumpable before it reads a secret or a
// token: no core file is written for it and processes of other users (even
// of the same one, under ptrace_scope 1) cannot read its memory, as the
// unlock agent already does. The children it starts are dumpable again
// (execve resets the flag).
func noCoreDump() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
