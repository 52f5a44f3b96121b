package audit

import (
	"fmt"
	"os"
	"strings"
)

// Caller describes the process that ran this one (its parent): who takes
// what a command prints (a script's $(shipkey token), kubectl's exec
// credential plugin call).
func Caller() Receiver { return Describe(os.Getppid()) }

// Self describes this process (the app: what it copies or shows).
func Self() Receiver { return Describe(os.Getpid()) }

// Describe is the process pid as the system says it: its uid, executable
// and command line where the system tells them (Linux's /proc), and the
// ssh session it runs in. A process that is gone or hidden leaves the
// fields it could not read empty.
func Describe(pid int) Receiver {
	r := describe(pid)
	r.PID = pid
	if r.SSH == "" && (pid == os.Getpid() || pid == os.Getppid()) {
		// This process inherited its caller's session.
		r.SSH = sshSession(os.Getenv)
	}
	return r.Bounded()
}

// sshSession is SSH_CONNECTION (client address and port, server address
// and port), with SSH_TTY when there is one.
func sshSession(getenv func(string) string) string {
	conn, tty := getenv("SSH_CONNECTION"), getenv("SSH_TTY")
	switch {
	case conn == "":
		return ""
	case tty == "":
		return conn
	default:
		return conn + " tty " + tty
	}
}

// SSHSessionOf is the ssh session an environment (NAME=VALUE entries, as
// exec.Cmd's Env) names: for a child that ended before it was described.
func SSHSessionOf(env []string) string {
	return sshSession(func(name string) string {
		for i := len(env) - 1; i >= 0; i-- { // the last entry wins, as in exec
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v
			}
		}
		return ""
	})
}

// envOf picks name's value out of a NUL-separated environment block.
func envOf(block []byte) func(string) string {
	return func(name string) string {
		for kv := range strings.SplitSeq(string(block), "\x00") {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v
			}
		}
		return ""
	}
}

// String is the receiver in one line for a person: pid, uid, executable,
// command line and ssh session, as far as known. It is untrusted text (a
// command line is anyone's): clean it before it goes to a terminal.
func (r Receiver) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d", r.PID)
	if r.UID >= 0 {
		fmt.Fprintf(&b, " uid %d", r.UID)
	}
	if r.Exe != "" {
		b.WriteString(" " + r.Exe)
	}
	if len(r.Cmdline) > 0 {
		b.WriteString(" (" + strings.Join(r.Cmdline, " ") + ")")
	}
	if r.SSH != "" {
		b.WriteString(" ssh " + r.SSH)
	}
	return b.String()
}
