package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// Key-less logins: a key whose grant (jwt-bearer) or client authentication
// (client_assertion) is an assertion of a trusted external issuer keeps
// where to read it, never the assertion: a file (a CI system's identity
// token file, a Kubernetes projected service account token), read again at
// every request, or a command that prints one, run again at every request.

// maxAssertion bounds what is read from an assertion file or command: an
// identity token is a few KiB.
const maxAssertion = 64 << 10

// assertionCmdTimeout bounds an assertion command (the request's own
// deadline applies too).
const assertionCmdTimeout = 30 * time.Second

// assertionSource is the source of file or cmd (the one given), nil for
// neither.
func assertionSource(file, cmd string) *auth.AssertionSource {
	switch {
	case file != "":
		return &auth.AssertionSource{From: "the file " + text.Safe(file), Fetch: func(ctx context.Context) (string, error) {
			return readAssertionFile(ctx, file)
		}}
	case strings.TrimSpace(cmd) != "":
		argv := strings.Fields(cmd)
		return &auth.AssertionSource{From: "the command " + text.Safe(filepath.Base(argv[0])), Fetch: func(ctx context.Context) (string, error) {
			return runAssertionCmd(ctx, argv)
		}}
	}
	return nil
}

// readAssertionFile reads an assertion file. Its errors name the file and
// what went wrong, never its contents. It is opened without blocking, so a
// named pipe (a process substitution kept in a key) with nobody writing
// reads as empty instead of hanging, and a writer that never finishes is
// given the time a command is.
func readAssertionFile(ctx context.Context, path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", errors.New("it does not exist")
		case errors.Is(err, fs.ErrPermission):
			return "", errors.New("permission denied")
		}
		return "", errors.New("it cannot be opened")
	}
	defer f.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(assertionCmdTimeout)
	}
	_ = f.SetReadDeadline(deadline) // a regular file has none: it does not block
	b, err := io.ReadAll(io.LimitReader(f, maxAssertion+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "", errors.New("nothing finished writing it in time")
	case err != nil:
		return "", errors.New("it cannot be read")
	case len(b) > maxAssertion:
		return "", fmt.Errorf("it is larger than %d KiB", maxAssertion>>10)
	case len(bytes.TrimSpace(b)) == 0:
		return "", errors.New("it is empty")
	}
	return string(b), nil
}

// runAssertionCmd runs argv (no shell) with shipkey's environment (a CI
// system's token request variables reach it) and returns what it printed.
// Its stderr is dropped; its errors say how it ended, never what it printed.
func runAssertionCmd(ctx context.Context, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, assertionCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second
	out := &limitedBuffer{max: maxAssertion}
	cmd.Stdout = out
	err := cmd.Run()
	if out.over {
		// Checked first: a command stopped by the full pipe dies of SIGPIPE.
		return "", fmt.Errorf("it printed more than %d KiB", maxAssertion>>10)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// It exited 0 and left a child holding its stdout (a helper that
		// starts an agent): what it printed until then is its answer.
		err = nil
	}
	if err != nil {
		var exit *exec.ExitError
		switch {
		case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
			return "", errors.New("it was not found")
		case ctx.Err() == context.DeadlineExceeded && len(bytes.TrimSpace(out.b)) > 0:
			return "", fmt.Errorf("it printed but did not exit within %s (its output is taken once it exits)", assertionCmdTimeout)
		case ctx.Err() == context.DeadlineExceeded:
			return "", fmt.Errorf("it printed nothing within %s", assertionCmdTimeout)
		case errors.As(err, &exit):
			return "", fmt.Errorf("it exited with status %d", exit.ExitCode())
		}
		return "", errors.New("it could not be run")
	}
	if len(bytes.TrimSpace(out.b)) == 0 {
		return "", errors.New("it printed nothing")
	}
	return string(out.b), nil
}

// limitedBuffer keeps the first max bytes written to it and notes more.
// It takes all it is given, so a command that prints more ends on its own
// instead of dying of a closed pipe.
type limitedBuffer struct {
	b    []byte
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); len(p) > room {
		l.over = true
		l.b = append(l.b, p[:max(room, 0)]...)
		return len(p), nil
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

// GrantAssertion is where the key's jwt-bearer grant reads its assertion.
func (d Definition) GrantAssertion() *auth.AssertionSource {
	return assertionSource(d.AssertionFile, d.AssertionCmd)
}

// authOf is the client authentication of a key defined by d with these
// secrets: clientAuth, with the client assertion's source for a method
// that reads one.
func (k keySecrets) authOf(d Definition) auth.ClientAuth {
	ca := k.clientAuth(d.Connection)
	if d.AuthMethod().Needs().External {
		ca.Assertion = assertionSource(d.ClientAssertionFile, d.ClientAssertionCmd)
	}
	return ca
}

// CheckAssertionSources checks the sources d's grant and client
// authentication need, one of file or command each, and none that they do
// not; a file's path, and a command's program given by a relative path
// (./ci/token), are made absolute (renewals run from any directory), a
// leading ~/ the home directory.
func CheckAssertionSources(d *Definition) error {
	for _, src := range []struct {
		file, cmd *string
		needed    bool
		what      string
		flags     string
	}{
		{&d.AssertionFile, &d.AssertionCmd, d.Grant == auth.GrantJWTBearer, "the jwt-bearer grant", "--assertion-file FILE or --assertion-cmd CMD"},
		{&d.ClientAssertionFile, &d.ClientAssertionCmd, d.AuthMethod().Needs().External, "client authentication " + string(auth.ClientAssertion),
			"--client-assertion-file FILE or --client-assertion-cmd CMD"},
	} {
		*src.cmd = strings.TrimSpace(*src.cmd)
		given := *src.file != "" || *src.cmd != ""
		switch {
		case !src.needed && given:
			return errors.New(strings.Replace(src.flags, " or ", " and ", 1) + " are for " + src.what + " only")
		case !src.needed:
			continue
		case !given:
			return errors.New(src.what + " reads an assertion of a trusted issuer: pass " + src.flags)
		case *src.file != "" && *src.cmd != "":
			return errors.New("pass " + src.flags + ", not both")
		case *src.file != "":
			abs, err := absPath(*src.file)
			if err != nil {
				return err
			}
			*src.file = abs
		case strings.ContainsRune(strings.Fields(*src.cmd)[0], filepath.Separator):
			prog := strings.Fields(*src.cmd)[0]
			abs, err := absPath(prog)
			if err != nil {
				return err
			}
			*src.cmd = abs + (*src.cmd)[len(prog):]
		}
	}
	return nil
}

// absPath is p made absolute, a leading ~/ as the home directory: no shell
// expands it in the app's form, in config.toml or in --assertion-file=~/….
func absPath(p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~"+string(filepath.Separator)); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, rest), nil
	}
	return filepath.Abs(p)
}
