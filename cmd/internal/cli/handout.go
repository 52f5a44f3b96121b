package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
)

// EnvAudit turns the audit trail off with "off" (it is on otherwise).
const EnvAudit = "SHIPKEY_AUDIT"

// auditOff reports whether SHIPKEY_AUDIT turns the trail off.
func auditOff() bool { return strings.EqualFold(strings.TrimSpace(os.Getenv(EnvAudit)), "off") }

// auditDir is where st's audit trail is kept: the state directory's audit
// folder.
func auditDir(st *store.Store) string { return filepath.Join(st.StateDir(), "audit") }

// auditTrail is st's audit trail, nil when SHIPKEY_AUDIT=off.
func auditTrail(st *store.Store) *audit.Log {
	if st == nil || auditOff() {
		return nil
	}
	return audit.Open(auditDir(st), audit.Options{})
}

// auditStatus is status's line on the audit trail: where it is, or that it
// is off.
func auditStatus(st *store.Store) string {
	if auditOff() {
		return "audit trail: off (" + EnvAudit + "=off)"
	}
	return "audit trail: " + text.Path(filepath.Join(auditDir(st), audit.CurrentFile)) + " (shipkey audit)"
}

// handOut is a hand-out of what by via to the caller (the process that ran
// shipkey).
func handOut(what audit.What, via string) *keys.HandOut {
	return &keys.HandOut{What: what, Via: via}
}

// recordChild records the hand-out of token to the child c just started:
// its pid, and its executable, command line and ssh session as the system
// says them (as c ran them when the child has already ended: a zombie's are
// gone). When
// the entry cannot be written the child is killed (no hand-out goes
// unrecorded) and the error returned.
func recordChild(svc *keys.Service, c *exec.Cmd, name string, x auth.Exchange, what audit.What, via, token string) error {
	to := func() audit.Receiver {
		r := audit.Describe(c.Process.Pid)
		if r.Exe == "" {
			r.Exe = c.Path
		}
		if len(r.Cmdline) == 0 {
			r.Cmdline = c.Args
		}
		if r.SSH == "" {
			env := c.Env
			if env == nil {
				env = os.Environ()
			}
			r.SSH = audit.SSHSessionOf(env)
		}
		return r.Bounded()
	}
	if err := svc.Record(name, x, keys.HandOut{What: what, Via: via, To: to}, token); err != nil {
		_ = c.Process.Kill()
		return err
	}
	return nil
}

// peerKey carries a token socket connection's peer pid in its requests'
// contexts.
type peerKey struct{}

// withPeer is ctx for the connections of the peer process pid.
func withPeer(ctx context.Context, pid int) context.Context {
	return context.WithValue(ctx, peerKey{}, pid)
}

// peerOf is the hand-out of what by via to the peer of the request's
// connection (SO_PEERCRED's pid); the caller of shipkey when unknown.
func peerOf(ctx context.Context, what audit.What, via string) *keys.HandOut {
	h := handOut(what, via)
	if pid, ok := ctx.Value(peerKey{}).(int); ok && pid > 0 {
		h.To = func() audit.Receiver { return audit.Describe(pid) }
	}
	return h
}
