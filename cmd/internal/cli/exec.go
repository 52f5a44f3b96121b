package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// execOptions runs a command with a key's access token in its environment.
type execOptions struct {
	IO      *iostreams
	Now     func() time.Time
	Store   func() (*store.Store, error)
	Secrets *secretSet
	// Environ is the environment the command starts from (os.Environ).
	Environ func() []string

	Label    string
	Command  []string // the command and its arguments, after --
	MinValid time.Duration
	EnvName  string
	// ForceRefresh renews the token before the command starts.
	ForceRefresh bool
	// Serve gives the command a private token socket (SHIPKEY_SOCKET) for
	// its lifetime (--serve).
	Serve bool
	// TokenFile gives the command a token file kept fresh
	// (SHIPKEY_TOKEN_FILE) for its lifetime (--token-file).
	TokenFile bool
	// Team is the team engine, for "T/LABEL" (nil: none linked).
	Team func() (team.Engine, error)
	// Exchange hands the command a token for another audience (--audience,
	// …); the --serve socket then answers such tokens too.
	Exchange exchangeFlags
}

// Exit codes of exec when the command cannot be run, as POSIX shells use.
const (
	exitCannotRun = 126 // found but not executable
	exitNotFound  = 127 // no such command
)

// envSocket names exec --serve's token socket in the command's environment.
const envSocket = "SHIPKEY_SOCKET"

// childSecretVars are shipkey's own secrets in the environment: never passed on.
var childSecretVars = []string{envPassword, envClientSecret, "SHIPKEY_PASSPHRASE"}

var envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) }) // compiled on first use, not at every start

func newCmdExec(f *factory, runF func(context.Context, *execOptions) error) *cobra.Command {
	opts := &execOptions{IO: f.IO, Now: f.Now, Store: f.Store, Secrets: f.Secrets, Environ: os.Environ, Team: f.engine()}
	cmd := &cobra.Command{
		Use:   "exec [LABEL] -- COMMAND [ARG...]",
		Short: "Run a command with the key's access token in its environment",
		Long: `Run COMMAND with the key's access token in SHIPKEY_TOKEN (or the variable
named by --env), valid for at least --min-valid (renewed first when needed).
None of shipkey's own secrets (SHIPKEY_PASSWORD, SHIPKEY_CLIENT_SECRET,
SHIPKEY_PASSPHRASE) reach the command's environment. Standard input, output
and error are the command's; SIGINT, SIGTERM and SIGHUP sent to shipkey are
passed on to it.

With --serve, the command also gets a private token socket for its
lifetime, named by SHIPKEY_SOCKET (mode 0600, in a new 0700 directory that
is removed when the command ends; connections of other users refused): a
job that outlives its token asks it for a fresh one whenever it needs,

  curl -s --unix-socket "$SHIPKEY_SOCKET" http://shipkey/v1/token?min_valid=60

which answers the "shipkey token --json" body; for a DPoP-bound key,
POST /v1/proof with {"method":"GET","url":"https://…"} adds a proof signed
for that request (see: shipkey serve --help).

With --token-file, the command also gets a file holding the key's current
access token, named by SHIPKEY_TOKEN_FILE (mode 0600, in a new 0700
directory removed when the command ends), for programs that read a bearer
token from a file: renewed when a quarter of the token's life is left and
replaced whole (a reader never sees part of a token); removed at once when
the key is logged out (see: shipkey serve --help, --sink).

The exit code is the command's own (128+N when signal N ended it); 127 when
COMMAND is not found, 126 when it cannot be run; shipkey's own when no token
can be had (3: log in again).

--env refuses variables that the loader, shells or runtimes act on (LD_*,
DYLD_*, PATH, IFS, ENV, BASH_ENV, NODE_OPTIONS, …) and SHIPKEY_* other than
SHIPKEY_TOKEN. A signal that arrives before COMMAND starts ends shipkey with
128+N and COMMAND is not run.

Without LABEL: SHIPKEY_KEY, else the default key, else the only key.`,
		Example: `  shipkey exec prod -- ./sync-shipments      # reads $SHIPKEY_TOKEN
  shipkey exec --serve prod -- ./job-longer-than-a-token   # asks $SHIPKEY_SOCKET for fresh tokens
  shipkey exec --token-file prod -- ./agent --token-file-from-env   # reads $SHIPKEY_TOKEN_FILE
  shipkey exec prod --min-valid 10m --env API_TOKEN -- ./long-running-job`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 0:
				return usageErrorf("name the command after --: %s (see: %s --help)", cmd.Use, cmd.CommandPath())
			case dash > 1:
				return usageErrorf("at most one LABEL before --, got %d (see: %s --help)", dash, cmd.CommandPath())
			case dash == len(args):
				return usageErrorf("no command after -- (see: %s --help)", cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeExec(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			opts.Label = labelArg(args[:dash])
			opts.Command = args[dash:]
			if opts.MinValid < 0 {
				return usageErrorf("--min-valid must not be negative (see: %s --help)", cmd.CommandPath())
			}
			if !envNamePattern().MatchString(opts.EnvName) {
				return usageErrorf("--env %s is not a variable name (letters, digits and _, not starting with a digit)", text.ShellQuote(opts.EnvName))
			}
			if unsafeEnvName(opts.EnvName) {
				return usageErrorf("--env %s: the loader, the C library, git, a shell or shipkey itself acts on that variable; name another (such as API_TOKEN)", opts.EnvName)
			}
			if err := opts.Exchange.check(cmd); err != nil {
				return err
			}
			if opts.TokenFile && opts.Exchange.set() {
				return usageErrorf("--token-file keeps the key's own token; a token for another audience is had with --serve (see: %s --help)", cmd.CommandPath())
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return execRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.MinValid, "min-valid", time.Minute, "the token must stay valid at least this long; renewed first otherwise")
	cmd.Flags().StringVar(&opts.EnvName, "env", "SHIPKEY_TOKEN", "name of the variable that carries the token")
	cmd.Flags().BoolVar(&opts.ForceRefresh, "force-refresh", false, "renew the token before running the command, even when it looks valid")
	cmd.Flags().BoolVar(&opts.Serve, "serve", false, "give the command a private token socket ($"+envSocket+") for fresh tokens while it runs")
	cmd.Flags().BoolVar(&opts.TokenFile, "token-file", false, "give the command a file ($"+envTokenFile+") that holds the key's token, kept fresh while it runs")
	opts.Exchange.add(cmd.Flags(), true)
	cmd.Long += "\n\n" + exchangeFlagsHelp + "\nWith --serve, the socket then answers tokens for that audience too."
	return cmd
}

func execRun(ctx context.Context, opts *execOptions) error {
	noCoreDump() // this process holds the token while the command runs
	// Listen from the start: a signal that arrives before the command starts
	// ends shipkey (128+N) and the command never runs; one that arrives after
	// is passed on to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fwd := &signalForwarder{}
	done := make(chan struct{})
	defer close(done)
	go fwd.run(sigs, done, cancel)

	// Find the command first: a typo should not cost a token refresh.
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return commandError(opts.Command[0], err)
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	o := opts.tokenOptions()
	svc := newKeys(st, opts.Team, opts.IO, opts.Secrets, opts.Now, nil)
	tok, err := svc.Token(ctx, opts.Label, o)
	ts, label := tok.TokenSet, tok.Key.Label // label: the key served on the socket
	if sig, ok := stoppedBy(ctx); ok {
		return signalExit(sig, notRun)
	}
	if err != nil {
		return err
	}

	c := exec.Command(path, opts.Command[1:]...)
	c.Args[0] = opts.Command[0]
	c.Env = childEnv(opts.Environ(), opts.EnvName, ts.AccessToken)
	if opts.Serve {
		stop, err := opts.serveSocket(c, st, label)
		if err != nil {
			return err
		}
		defer stop()
	}
	if opts.TokenFile {
		stop, err := opts.serveFile(c, st, svc, label)
		if err != nil {
			return err
		}
		defer stop()
	}
	c.Stdin, c.Stdout, c.Stderr = opts.IO.In, opts.IO.Out, opts.IO.ErrOut
	if err := fwd.start(ctx, c, opts.Command[0]); err != nil {
		return err
	}
	// Recorded once the child is there to name (its pid, its executable).
	if err := recordChild(svc, c, tok.Name, o.Exchange, audit.Token, "exec", ts.AccessToken); err != nil {
		_ = c.Wait()
		return err
	}
	return childExit(c.Wait())
}

// notRun ends exec's lines for a command that did not start.
const notRun = "the command was not run"

// tokenOptions is how exec gets its token: valid for --min-valid, renewed
// first with --force-refresh, for the exchange's audience; --serve and
// --token-file take a key of this machine, --token-file one without DPoP.
func (opts *execOptions) tokenOptions() keys.TokenOptions {
	o := keys.TokenOptions{MinValid: opts.MinValid, Force: opts.ForceRefresh}
	if opts.Exchange.set() {
		o.Exchange = opts.Exchange.exchange()
	}
	switch {
	case opts.Serve:
		o.MachineOnly = "--serve takes a key of this machine; a team key's command gets its token in " + opts.EnvName
	case opts.TokenFile:
		o.MachineOnly = "--token-file takes a key of this machine; a team key's command gets its token in " + opts.EnvName
	}
	if opts.TokenFile {
		o.Local = func(k store.Key) error {
			if k.Connection.DPoP {
				return usageErrorf("--token-file: key %s's tokens are DPoP-bound, useless without a proof per request; use --serve (POST /v1/proof)", k.Label)
			}
			return nil
		}
	}
	return o
}

// serveSocket starts --serve's token socket for label and names it in c's
// environment; stop ends it.
func (opts *execOptions) serveSocket(c *exec.Cmd, st *store.Store, label string) (stop func(), err error) {
	sock, err := startTokenSocket(st, label, opts.Exchange.exchange(), opts.Secrets, func(uid, owner int) {
		opts.IO.ErrText().Linef("shipkey: exec --serve: refused a connection from uid %d (only uid %d is served)", uid, owner)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", notRun, err)
	}
	c.Env = append(withoutVars(c.Env, envSocket), envSocket+"="+sock.Path)
	return sock.Stop, nil
}

// serveFile starts --token-file's file for label and names it in c's
// environment; stop ends it.
func (opts *execOptions) serveFile(c *exec.Cmd, st *store.Store, svc *keys.Service, label string) (stop func(), err error) {
	tf, err := startTokenFile(st, svc, label, func(format string, args ...any) {
		opts.IO.ErrText().Line(text.Trusted("shipkey: exec: "), text.Cleanf(format, args...))
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", notRun, err)
	}
	c.Env = append(withoutVars(c.Env, envTokenFile), envTokenFile+"="+tf.Path)
	return tf.Stop, nil
}

// signalForwarder passes exec's signals on to the command once it has
// started; before, a signal ends exec (its cause on the context).
type signalForwarder struct {
	mu    sync.Mutex
	child *os.Process // set once the command has started
}

// run forwards what comes on sigs until done closes.
func (f *signalForwarder) run(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelCauseFunc) {
	for {
		select {
		case sig := <-sigs:
			f.mu.Lock()
			p := f.child
			f.mu.Unlock()
			switch s, ok := sig.(syscall.Signal); {
			case p == nil && ok:
				cancel(signalCause{s})
			case p != nil && !fromOwnTerminal(sig):
				_ = p.Signal(sig)
			}
		case <-done:
			return
		}
	}
}

// start starts c (named name in errors) unless a signal stopped ctx:
// under mu, a signal is either seen here (not started) or passed on to the
// started command, never lost between.
func (f *signalForwarder) start(ctx context.Context, c *exec.Cmd, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sig, ok := stoppedBy(ctx); ok {
		return signalExit(sig, notRun)
	}
	if err := c.Start(); err != nil {
		return commandError(name, err)
	}
	f.child = c.Process
	return nil
}

// childEnv is env without shipkey's secrets and without any earlier value of
// name, plus name=token.
func childEnv(env []string, name, token string) []string {
	return append(withoutVars(env, name), name+"="+token)
}

// withoutVars is env without shipkey's secrets and the variables named.
func withoutVars(env []string, names ...string) []string {
	drop := slices.Concat(names, childSecretVars)
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return out
}

// childExit turns the command's end into shipkey's exit: its exit code, or
// 128+N for a death by signal N; no line is printed (the command spoke for
// itself).
func childExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("running the command: %w", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitError{code: 128 + int(ws.Signal())}
	}
	return &exitError{code: ee.ExitCode()}
}

// commandError is the one line for a command that cannot be run: 127 when it
// does not exist, 126 otherwise.
func commandError(name string, err error) error {
	code := exitCannotRun
	what := "cannot be run"
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code, what = exitNotFound, "command not found"
	}
	return &exitError{code: code, err: text.Errorf("%s: %s (%v)", name, what, unwrapExecError(err))}
}

// unwrapExecError drops exec.Error's "exec: NAME:" prefix (the line names
// the command already).
func unwrapExecError(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
