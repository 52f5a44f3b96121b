package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
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

A URL argument that is a path (/shipments) is resolved against the key's
API base URL (api_url: keys new or keys set --api-url). For a key with
DPoP-bound tokens (keys new --dpop) the token goes with the DPoP scheme and
a DPoP proof signed for the request's method and URL, read from curl's
arguments (-X, -I, -G, -T, the data options, the one URL); arguments that
do not tell them (several URLs, a glob, --next, -K) are refused. A server
that asks for a DPoP nonce is answered by shipkey api, not here.

curl's output, errors and exit code are its own (127 when curl is not
installed); shipkey's own exit codes apply when no token can be had (3: log
in again). Nothing is retried: for a request renewed and retried once on an
invalid-token 401, use shipkey api. Without --key: SHIPKEY_KEY, else the
default key, else the only key.`,
		Example: `  shipkey curl -- -sS https://api.example.com/v1/shipments
  shipkey curl --key prod -- -sS -X DELETE /shipments/7      # under prod's api_url
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
	svc := newKeys(st, nil, opts.IO, opts.Secrets, opts.Now, nil)
	key, err := svc.MachineKey(opts.Label, "shipkey curl")
	if err != nil {
		return err
	}
	dpop, err := svc.DPoP(key)
	if err != nil {
		return err
	}
	// A path argument goes under the key's api_url; a DPoP proof is signed
	// for the method and URL, which must then be clear.
	method, target, err := curlTarget(opts.Args, func(path string) (string, error) {
		u, err := keyTarget(path, key)
		if err != nil {
			return "", err
		}
		return u.String(), nil
	}, dpop != nil)
	if err != nil {
		return err
	}
	o := keys.TokenOptions{Force: opts.ForceRefresh}
	if opts.Exchange.set() {
		o.Exchange = opts.Exchange.exchange()
	}
	ts, err := svc.KeyToken(ctx, key, o)
	if err != nil {
		return err
	}
	config, err := curlConfig(ts, dpop, method, target, opts.Now())
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
	what := audit.Header
	if dpop != nil {
		what = audit.Proof
	}
	if err := recordChild(svc, c, key.Label, o.Exchange, what, "curl", ts.AccessToken); err != nil {
		_ = c.Wait()
		return err
	}
	return childExit(c.Wait())
}

// curlConfig is the curl config that authorizes the request: the
// Authorization header, and for a DPoP-bound token the DPoP scheme and a
// proof signed for method and target with the key's DPoP key.
func curlConfig(ts *auth.TokenSet, dpop *auth.DPoPKey, method, target string, now time.Time) (string, error) {
	if dpop == nil || !strings.EqualFold(ts.TokenType, auth.DPoPTokenType) {
		return curlConfigHeader(ts)
	}
	proof, err := dpop.Proof(method, target, ts.AccessToken, "", now)
	if err != nil {
		return "", err
	}
	authz, err := curlConfigLine("Authorization: " + auth.DPoPTokenType + " " + ts.AccessToken)
	if err != nil {
		return "", err
	}
	line, err := curlConfigLine("DPoP: " + proof)
	return authz + line, err
}
