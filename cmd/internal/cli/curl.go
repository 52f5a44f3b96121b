package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// curlOptions runs curl with a key's token.
type curlOptions struct {
	IO      *iostreams
	Now     func() time.Time
	Store   func() (*store.Store, error)
	Secrets *secretSet

	Label        string   // --key
	Args         []string // curl's arguments, after --
	ForceRefresh bool
	// Exchange sends a token for another audience (--audience, …).
	Exchange exchangeFlags
	// Curl is the curl program (default: curl on PATH).
	Curl string
}

func newCmdCurl(f *factory, runF func(context.Context, *curlOptions) error) *cobra.Command {
	opts := &curlOptions{IO: f.IO, Now: f.Now, Store: f.readingStore, Secrets: f.Secrets, Curl: "curl"}
	cmd := &cobra.Command{
		Use:   "curl [--key KEY] -- CURL-ARGS...",
		Short: "Run curl with the key's token in its Authorization header",
		Long: `Run curl with CURL-ARGS and the key's access token (renewed first when it is
about to expire) in the Authorization header.

The header reaches curl through a config file on a file descriptor of its
own (-K /dev/fd/3): never on its command line, which every local user can
read, and not on its standard input, which stays yours: a body piped in
with --data-binary @- or -T - arrives whole.

curl's output, errors and exit code are its own (127 when curl is not
installed); shipkey's own exit codes apply when no token can be had (3: log
in again). Nothing is retried: for a request renewed and retried once on an
invalid-token 401, use shipkey api. Without --key: SHIPKEY_KEY, else the
default key, else the only key.`,
		Example: `  shipkey curl -- -sS https://api.example.com/v1/shipments
  gzip -dc batch.json.gz | shipkey curl --key prod -- -sS --data-binary @- -H 'Content-Type: application/json' https://api.example.com/v1/import`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch dash := cmd.ArgsLenAtDash(); {
			case dash < 0:
				return usageErrorf("give curl's arguments after --: %s (see: %s --help)", cmd.Use, cmd.CommandPath())
			case dash > 0:
				return usageErrorf("nothing goes between the flags and --; name the key with --key (see: %s --help)", cmd.CommandPath())
			case dash == len(args):
				return usageErrorf("no curl arguments after -- (see: %s --help)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if err := opts.Exchange.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return curlRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Label, "key", "", "the API key whose token is sent")
	cmd.Flags().BoolVar(&opts.ForceRefresh, "force-refresh", false, "renew the token first, even when it looks valid")
	opts.Exchange.add(cmd.Flags(), true)
	cmd.Long += "\n\n" + exchangeFlagsHelp
	_ = cmd.RegisterFlagCompletionFunc("key", completeLabelFlag(f))
	return cmd
}

func curlRun(ctx context.Context, opts *curlOptions) error {
	path, err := exec.LookPath(opts.Curl)
	if err != nil {
		return commandError(opts.Curl, err)
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	opts.Label = labelOrEnv(st, opts.Label)
	if _, _, ok := teamKeyAddress(st, opts.Label); ok {
		return usageErrorf("shipkey curl takes a key of this machine; for a team key run: shipkey exec %s -- …", text.ShellQuote(opts.Label))
	}
	key, err := resolveKey(st, opts.Label)
	if err != nil {
		return err
	}
	var ts *auth.TokenSet
	switch {
	case opts.Exchange.set():
		ts, err = exchangedToken(ctx, st, key, opts.Exchange.exchange(), 0, opts.ForceRefresh, opts.Secrets)
	case opts.ForceRefresh:
		ts, err = forcedToken(ctx, st, key, opts.Secrets)
	default:
		ts, err = freshToken(ctx, st, key, 0, opts.Secrets, opts.IO, opts.Now)
	}
	if err != nil {
		return err
	}
	config, err := curlConfigHeader(ts)
	if err != nil {
		return err
	}
	// The config goes through a pipe that curl reads as fd 3. It is a few
	// hundred bytes, far under a pipe's buffer: written whole before curl
	// starts, and the write end closed so curl sees its end.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := w.WriteString(config); err != nil {
		w.Close()
		return fmt.Errorf("handing the header to curl: %w", err)
	}
	w.Close()

	c := exec.Command(path, append([]string{"-K", "/dev/fd/3"}, opts.Args...)...)
	c.Args[0] = opts.Curl
	c.ExtraFiles = []*os.File{r}
	c.Env = withoutVars(os.Environ())
	c.Stdin, c.Stdout, c.Stderr = opts.IO.In, opts.IO.Out, opts.IO.ErrOut
	if err := c.Start(); err != nil {
		return commandError(opts.Curl, err)
	}
	r.Close()
	return childExit(c.Wait())
}
