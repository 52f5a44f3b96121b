package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Exit codes scripts rely on.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2 // bad flags or arguments, or no way to get a needed secret
	exitLoginNeeded = 3 // only a new login can help
)

// usageError marks a mistake in how shipkey was called (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError ends shipkey with a given exit code: a command's own status
// (exec), or a verdict already printed (status -q, inspect --verify). With a
// nil err nothing more is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// silent reports whether err asks for no error line.
func silent(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.err == nil
}

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, team.ErrUnavailable):
		return exitEtcdUnavailable
	case errors.Is(err, store.ErrLoginNeeded) || auth.IsLoginRequired(err):
		return exitLoginNeeded
	default:
		return exitFailure
	}
}

// errorLine is the one line printed for err: "shipkey: <message>", with any
// control characters in the message made visible.
func errorLine(err error) string {
	msg := err.Error()
	if errors.Is(err, store.ErrBackendMissing) && !strings.Contains(msg, "SHIPKEY_SECRETS") {
		msg += "; to keep secrets in an encrypted file instead, set SHIPKEY_SECRETS=file"
	}
	return "shipkey: " + text.Safe(msg)
}
