package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// Exit codes scripts rely on.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2 // bad flags or arguments, or no way to get a needed secret
	exitLoginNeeded = 3 // only a new login can help
	// exitCredentialsRefused: the server refused the client's or the user's
	// credentials (a wrong client secret, invalid_client, a refused
	// password): fix the secret, retrying will not help.
	exitCredentialsRefused = 5
	// exitUnreachable: the server could not be reached, did not answer in
	// time, or failed (5xx): retry later.
	exitUnreachable = 6
)

// exitCodesHelp is the exit-code paragraph of the root help.
const exitCodesHelp = `Exit codes: 0 success; 1 any other failure; 2 usage error (bad flags or
arguments, or no way to get a needed secret); 3 login needed (only a new
login helps); 4 a team's etcd cluster unavailable; 5 the server refused the
credentials (client secret or password: fix them); 6 the server unreachable,
too slow or failing with 5xx (retry later); 130 interrupted (Ctrl-C). exec
exits with its command's code. See each command's help for its own.`

// usageError marks a mistake in how shipkey was called (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{text.Errorf(format, args...)}
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
	var kue *keys.UsageError
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &ue), errors.As(err, &kue):
		return exitUsage
	case errors.Is(err, team.ErrUnavailable) || errors.Is(err, team.ErrBehind):
		return exitEtcdUnavailable
	case errors.Is(err, store.ErrLoginNeeded) || auth.IsLoginRequired(err):
		return exitLoginNeeded
	case credentialsRefused(err):
		return exitCredentialsRefused
	case unreachable(err):
		return exitUnreachable
	default:
		return exitFailure
	}
}

// errorLine is the one line printed for err: "shipkey: <message>", with any
// control characters in the message made visible.
func errorLine(err error) text.Clean {
	msg := err.Error()
	if errors.Is(err, store.ErrBackendMissing) && !strings.Contains(msg, "SHIPKEY_SECRETS") {
		msg += "; to keep secrets in an encrypted file instead, set SHIPKEY_SECRETS=file"
	}
	return text.Cleanf("shipkey: %s", msg)
}

// credentialsRefused reports whether the server refused the credentials
// themselves: the client (invalid_client, a wrong secret) or the user (a
// wrong password), or a refusal that does not say which.
func credentialsRefused(err error) bool {
	switch auth.KindOf(err) {
	case auth.KindInvalidClient, auth.KindInvalidCredentials, auth.KindCredentialsRefused, auth.KindAssertionRefused:
		return true
	}
	return false
}

// unreachable reports whether err is the server's trouble, not the
// request's: no connection, no answer in time, or a 5xx status.
func unreachable(err error) bool {
	var ae *auth.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Kind {
	case auth.KindNetwork, auth.KindTimeout:
		return true
	case auth.KindServer:
		return ae.Status >= 500
	}
	return false
}
