package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// run is the whole program: it parses os.Args, runs the command and returns
// the exit code.
func run() int {
	return runWith(os.Args[1:], systemIO(), os.Getenv)
}

// runWith runs shipkey with explicit arguments, streams and environment.
// A panic in the command becomes one line and exit 1, never a stack dump
// (which could hold a secret and tells a person nothing).
func runWith(args []string, ios *iostreams, getenv func(string) string) (code int) {
	defer recoverInto(ios, &code)
	ctx, stop := notifyContext(context.Background())
	defer stop()

	f := newFactory(ios, getenv)
	f.Args = args
	defer f.Close()

	root := newCmdRoot(f, onlyCommand(args))
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)

	err := root.ExecuteContext(ctx)
	if errors.Is(err, keys.ErrNoTeamEngine) && handOff != nil {
		// The command needs the team engine, which this program does not
		// link: the program that does runs it instead (it returns only on
		// failure).
		err = handOff(f)
	}
	if err == nil {
		return exitOK
	}
	if !silent(err) {
		ios.ErrText().Line(errorLine(err))
	}
	return exitCode(err)
}

// recoverInto turns a panic of the running command into one line on
// ios.ErrOut and exitFailure in *code. The panic's text is cut to its first
// line and stripped of anything long enough to be a token.
func recoverInto(ios *iostreams, code *int) {
	r := recover()
	if r == nil {
		return
	}
	what, _, _ := strings.Cut(fmt.Sprint(r), "\n")
	what = panicSecretLike().ReplaceAllString(what, "…")
	if len([]rune(what)) > 120 {
		what = string([]rune(what)[:120]) + "…"
	}
	ios.ErrText().Linef("shipkey: internal error (a bug in shipkey): %s; please report it with the command you ran", what)
	*code = exitFailure
}

// panicSecretLike matches runs a panic's text must not show: anything
// long enough to be a token or a secret.
var panicSecretLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9._~+/=-]{20,}`) })

// newCmdRoot builds the command tree: every command, or only the one named
// (onlyCommand).
func newCmdRoot(f *factory, only string) *cobra.Command {
	root := &cobra.Command{
		Use:   "shipkey",
		Short: "Manage OAuth 2.0 tokens and API keys for the Shipping Service API",
		Long: `shipkey gets API keys and access tokens for the Shipping Service API
from its Keycloak realm or any OAuth 2.0 / OpenID Connect server, keeps their
secrets in the OS keyring or an encrypted file, and hands out fresh access
tokens to scripts.

Grants (keys new --grant): password (the default: a username and password),
client-credentials (the client alone, for services), device-code (approve a
code on any device with a browser) and authcode (sign in with a browser on
this machine, PKCE).

Run it without arguments in a terminal for the interactive app.

Environment:
  SHIPKEY_KEY            label of the key to use when none is given
  SHIPKEY_CLIENT_SECRET  client secret for "keys new" (else a hidden prompt)
  SHIPKEY_PASSWORD       password for "keys new" and "login" (else --password-stdin or a prompt)
  SHIPKEY_SECRETS        secrets backend: auto, keyring, file, plaintext
  SHIPKEY_PASSPHRASE     passphrase of the encrypted secrets files
  SHIPKEY_UNLOCK_TIMEOUT how long an unlock lasts without use (default 10m; 0 = this process only)
  SHIPKEY_UNLOCK_MECH    where the unlocked key is kept: auto, kernel, agent, none
  SHIPKEY_TIMEOUT        bound on each request to the server, e.g. 45s (as --timeout)
  SHIPKEY_TEAM_TIMEOUT   bound on a team's etcd work, e.g. 3s (overrides every team's own)
  SHIPKEY_ETCD_PASSWORD  etcd password of --etcd-user (team init, team join)
  SHIPKEY_CONFIG_DIR     where config.toml lives
  SHIPKEY_STATE_DIR      where state.db, locks and the encrypted secrets live
  SHIPKEY_CA_FILE        PEM bundle of extra CA roots for a private CA

` + exitCodesHelp,
		Args:          usageArgs(cobra.NoArgs),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !f.IO.IsInteractive() {
				f.IO.ErrText().Print(text.SanitizeLines(cmd.UsageString()))
				return usageErrorf("not a terminal: run a command (see above), or run shipkey in a terminal for the interactive app")
			}
			// One read of the store before the first frame; tui.Run ends
			// ReadOnce once the first key list is read.
			st, err := f.readingStore()
			if err != nil {
				return err
			}
			// The team engine only on a machine that joined a team (in
			// cmd/shipkey this hands the app to shipkey-team, so before
			// anything is asked).
			var eng team.Engine
			if teams, err := st.Teams(); err != nil {
				return err
			} else if len(teams) > 0 {
				if eng, err = f.Team(); err != nil {
					return err
				}
			}
			client, err := f.Auth()
			if err != nil {
				return err
			}
			// Ask for the passphrase and say any keyring fallback now, while
			// the terminal is still a terminal; on a store with no key not
			// yet: Welcome and the inspector need no secret, and the first
			// new key unlocks, asking a passphrase in the app.
			// Only a file backend asks anything: the others unlock at once.
			locked := eng == nil && st.Backend() == store.BackendFile && storeIsEmpty(st)
			if !locked {
				if err := st.Unlock(); err != nil {
					return err
				}
			}
			return runTUI(cmd.Context(), uiOptions{Store: st, Auth: client, Now: f.Now, Diag: f.Diag, Team: eng,
				APIClient: f.APIClient, Secrets: f.Secrets, Locked: locked})
		},
	}
	root.PersistentFlags().BoolVar(&f.Debug, "debug", false, "log HTTP requests to stderr (secrets redacted)")
	root.PersistentFlags().DurationVar(&f.Timeout, "timeout", 0, "bound each request to the server, e.g. 45s (default 30s; also "+EnvTimeout+" or timeout in config.toml)")
	root.PersistentFlags().StringVar(&f.CAFile, "ca-file", "", "trust the CA certificates of this PEM bundle too, for a realm or API behind a private CA (also SHIPKEY_CA_FILE)")
	makesRequests(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return refuseRequestFlags(cmd) }
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		defer hideRequestFlags(cmd)()
		defaultHelp(cmd, args)
	})
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see: %s --help)", err, cmd.CommandPath())}
	})
	root.CompletionOptions.HiddenDefaultCmd = false

	for _, c := range subcommands {
		if only == "" || c.name == only {
			root.AddCommand(c.build(f))
		}
	}
	completeFixedValues(root)
	return root
}

// subcommands are shipkey's commands, by name, built on demand.
var subcommands = []struct {
	name  string
	build func(*factory) *cobra.Command
}{
	{"keys", newCmdKeys},
	{"team", newCmdTeam},
	{"login", func(f *factory) *cobra.Command { return makesRequests(newCmdLogin(f, nil)) }},
	{"token", func(f *factory) *cobra.Command { return makesRequests(newCmdToken(f, false, nil)) }},
	{"header", func(f *factory) *cobra.Command { return makesRequests(newCmdToken(f, true, nil)) }},
	{"exec", func(f *factory) *cobra.Command { return makesRequests(newCmdExec(f, nil)) }},
	{"status", func(f *factory) *cobra.Command { return newCmdStatus(f, nil) }},
	{"inspect", func(f *factory) *cobra.Command { return makesRequests(newCmdInspect(f, nil)) }},
	{"logout", func(f *factory) *cobra.Command { return makesRequests(newCmdLogout(f, nil)) }},
	{"demo", func(f *factory) *cobra.Command { return makesRequests(newCmdDemo(f, nil)) }},
	{"version", newCmdVersion},
	{"unlock", newCmdUnlock},
	{"lock", newCmdLock},
	{"agent", newCmdAgent},
	{"serve", func(f *factory) *cobra.Command { return makesRequests(newCmdServe(f, nil)) }},
	{"api", func(f *factory) *cobra.Command { return makesRequests(newCmdAPI(f, nil)) }},
	{"curl", func(f *factory) *cobra.Command { return makesRequests(newCmdCurl(f, nil)) }},
	{"audit", func(f *factory) *cobra.Command { return newCmdAudit(f, nil) }},
}

// requestFlags shape the requests to the server: only the commands that
// make requests (makesRequests) show them in their help and accept them.
// They stay the root's persistent flags, so "shipkey --debug token" parses.
var requestFlags = []string{"debug", "timeout", "ca-file"}

const annotationRequests = "shipkey/requests"

// makesRequests marks cmd as a command that sends requests to the server.
func makesRequests(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationRequests] = "yes"
	return cmd
}

// refuseRequestFlags is a usage error when a request flag was given to a
// command that makes no request.
func refuseRequestFlags(cmd *cobra.Command) error {
	if cmd.Annotations[annotationRequests] != "" {
		return nil
	}
	for _, name := range requestFlags {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s: %s sends no request to the server (see: %s --help)", name, cmd.CommandPath(), cmd.CommandPath())
		}
	}
	return nil
}

// hideRequestFlags hides the request flags while cmd's help is printed,
// when cmd makes no request; the returned function shows them again.
func hideRequestFlags(cmd *cobra.Command) (restore func()) {
	if cmd.Annotations[annotationRequests] != "" {
		return func() {}
	}
	var hidden []*pflag.Flag
	for _, name := range requestFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && !fl.Hidden {
			fl.Hidden = true
			hidden = append(hidden, fl)
		}
	}
	return func() {
		for _, fl := range hidden {
			fl.Hidden = false
		}
	}
}

// onlyCommand is the one command a command line runs when its first
// argument names it: a call such as `shipkey token` then builds that command
// alone, not the whole tree (help, completion and anything else get it all).
func onlyCommand(args []string) string {
	if len(args) == 0 {
		return ""
	}
	for _, c := range subcommands {
		if c.name == args[0] {
			return c.name
		}
	}
	return ""
}

// usageArgs wraps an argument validator so its errors are usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			if cmd.HasSubCommands() && len(args) > 0 {
				return usageErrorf("unknown command %q for %q (see: %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
			}
			return &usageError{fmt.Errorf("%w (see: %s --help)", err, cmd.CommandPath())}
		}
		return nil
	}
}

// groupCommand makes cmd a pure group: help without arguments, a usage error
// for an unknown subcommand.
func groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = usageArgs(cobra.NoArgs)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return c.Help()
	}
	return cmd
}

// labelArg returns the optional label argument, or "".
func labelArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// missingFlags returns "--name" for each named flag that is empty.
func missingFlags(cmd *cobra.Command, names ...string) []string {
	var missing []string
	for _, n := range names {
		fl := cmd.Flags().Lookup(n)
		if fl == nil || strings.TrimSpace(fl.Value.String()) == "" {
			missing = append(missing, "--"+n)
		}
	}
	return missing
}

// errFirstKey stops storeIsEmpty's walk at the first key.
var errFirstKey = errors.New("a key")

// storeIsEmpty reports whether st holds no key (a store it cannot read is
// not called empty: the unlock then says what is wrong).
func storeIsEmpty(st *store.Store) bool {
	err := st.EachKey(func(store.Key) error { return errFirstKey })
	return err == nil
}
