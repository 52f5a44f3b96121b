package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// loginOptions logs an existing key in again.
type loginOptions struct {
	IO            *iostreams
	Getenv        func(string) string
	Now           func() time.Time
	Store         func() (*store.Store, error)
	Secrets       *secretSet
	Label         string
	PasswordStdin bool
	BrowserWait   time.Duration
	// Team is the team engine, for "T/LABEL".
	Team func() (team.Engine, error)
}

func newCmdLogin(f *factory, runF func(context.Context, *loginOptions) error) *cobra.Command {
	opts := &loginOptions{IO: f.IO, Getenv: f.Getenv, Now: f.Now, Store: f.Store, Secrets: f.Secrets, Team: f.engine()}
	cmd := &cobra.Command{
		Use:   "login [LABEL]",
		Short: "Log an API key in again (new tokens by its grant)",
		Long: `Log an API key in again by its grant (see: shipkey keys new --help).

For the password grant, the password comes from SHIPKEY_PASSWORD,
--password-stdin (one line) or a hidden prompt; when the key remembers its
password and none is given, the remembered one is used. The device code and
browser grants print what to do on stderr and wait (ctrl+c cancels, exit
130). Without LABEL: SHIPKEY_KEY, else the default key, else the only key.

A team key (TEAM/LABEL) gets new tokens for the whole team, under the
team-wide lock: client credentials run again; the password grant uses the
team's kept password, or the one given (which then replaces it for the team).`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the password from stdin (one line)")
	cmd.Flags().DurationVar(&opts.BrowserWait, "browser-timeout", auth.DefaultBrowserWait, "authcode: how long to wait for the browser to come back")
	return cmd
}

func loginRun(ctx context.Context, opts *loginOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, opts.Team, opts.IO, opts.Secrets, opts.Now, nil)
	ref, err := svc.Find(opts.Label)
	if err != nil {
		return err
	}
	ask, username, err := svc.LoginPassword(ref, opts.PasswordStdin, opts.Getenv(envPassword) != "")
	if err != nil {
		return err
	}
	password := ""
	if ask {
		if password, err = readSecret(opts.IO, opts.Getenv, userPassword(username, opts.PasswordStdin)); err != nil {
			return err
		}
		opts.Secrets.Add(password)
	}
	key, ts, err := svc.Login(ctx, ref.Label, store.LoginOptions{Password: password, Prompt: newPrompter(opts.IO, opts.Getenv), Wait: opts.BrowserWait})
	if err != nil {
		return interrupted(ctx, err)
	}
	who := keys.SubjectOf(key)
	opts.IO.ErrText().Linef("Logged in %s%s (%s)%s", who, who.Reach(), lifetimes(key, opts.Now()), signedInAs(key.Grant, ts, opts.Now()))
	return nil
}

// tokenOptions prints a key's access token, or the header carrying it.
type tokenOptions struct {
	IO       *iostreams
	Now      func() time.Time
	Store    func() (*store.Store, error)
	Secrets  *secretSet
	Label    string
	MinValid time.Duration // --min-valid: renew first unless valid this long
	// ForceRefresh renews now, even when the token looks valid
	// (--force-refresh): by the refresh token or the key's grant.
	ForceRefresh bool
	Header       bool // print "Authorization: Bearer <token>" (the header command)
	// Output is token's format: text, json or exec-credential (--output,
	// --json).
	Output string
	// CurlConfig prints the header as a curl config line (header
	// --curl-config).
	CurlConfig bool
	// Team is the team engine, for "T/LABEL" (nil: none linked).
	Team func() (team.Engine, error)
	// Exchange asks for a token for another audience instead of the key's
	// own (--audience, --resource; token shares --scope with --no-store).
	Exchange exchangeFlags

	// Proof (--dpop-proof METHOD URL) also prints a DPoP proof for that
	// request (dpopproof.go).
	Proof proofFlags

	// NoStore (--no-store) runs the grant the Conn flags name and prints
	// the token, without a store: nothing read or written, no passphrase.
	NoStore bool
	Conn    grantFlags
	Getenv  func(string) string
	Auth    func() (*auth.Client, error)
}

// newCmdToken builds "token", or "header" when header is set: one command
// body, two ways to print the result.
func newCmdToken(f *factory, header bool, runF func(context.Context, *tokenOptions) error) *cobra.Command {
	opts := &tokenOptions{IO: f.IO, Now: f.Now, Store: f.readingStore, Secrets: f.Secrets, Header: header, Getenv: f.Getenv, Auth: f.Auth, Team: f.engine()}
	cmd := &cobra.Command{
		Use:   "token [LABEL]",
		Short: "Print the key's access token, refreshed first if needed",
		Long: `Print the key's access token and a newline on stdout, refreshing it first
when it is about to expire, or when it would expire within --min-valid. Made
for scripts and for tools that cache what they get:

  --json                    {"access_token","token_type","expires_at","key","scope"}
                            (expires_at in RFC 3339, omitted when unknown)
  --output exec-credential  a Kubernetes client.authentication.k8s.io/v1
                            ExecCredential, for a kubeconfig exec plugin
  --dpop-proof METHOD URL   for a DPoP-bound key (keys new --dpop): the token
                            and a DPoP proof signed for that one request, on
                            two lines (--json: "dpop_proof"); send them as
                            "Authorization: DPoP <token>" and "DPoP: <proof>".
                            A proof is good for one request: ask for another
                            for the next, with --dpop-nonce when the API
                            answered 401 with a DPoP-Nonce header.

Never put the token on another command's command line, as in
curl -H "Authorization: Bearer $(shipkey token)": argv is readable by every
local user (ps, /proc/*/cmdline). Hand it over on stdin or in the
environment instead:

  shipkey api https://api.example.com/…        (the request itself)
  shipkey curl -- -sS https://api.example.com/… (curl, the header on fd 3)
  shipkey exec -- ./job    (the job reads $SHIPKEY_TOKEN)

Without LABEL: SHIPKEY_KEY, else the default key, else the only key.
Exit code 3 means only a new login can help (shipkey login).

With --no-store, for one-shot jobs (CI): no key and no store. The grant the
flags name (as for keys new) runs once and its access token is printed;
nothing is read or written on disk and no passphrase is asked. The client
secret comes from SHIPKEY_CLIENT_SECRET, the password from SHIPKEY_PASSWORD:

  SHIPKEY_CLIENT_SECRET=… shipkey token --no-store --grant client-credentials \
    --auth-url https://auth.example.com --client-id shipping-ci

Exit code 5: the server refused the credentials (fix the secret); 6: it
could not be reached, timed out or failed (retry).`,
	}
	if header {
		cmd.Use = "header [LABEL]"
		cmd.Short = "Print \"Authorization: Bearer <token>\" for the key"
		cmd.Long = `Print the HTTP header that carries the key's access token. With
--curl-config, print it as a curl config line (header = "…", quoted as curl
wants). To run curl with it, use shipkey curl, which hands curl the config
on a file descriptor of its own:

  shipkey curl -- -sS https://api.example.com/…

Never pass the header on curl's command line (curl -H "$(shipkey header)"):
argv is readable by every local user (ps, /proc/*/cmdline). Piping it to
curl -K - takes curl's standard input: a body sent with --data-binary @-
then arrives empty.

For a DPoP-bound key, --dpop-proof METHOD URL prints the two headers the
request needs: "Authorization: DPoP <token>" and "DPoP: <proof>", the
proof signed for that method and URL (one request only).

The token is refreshed first if needed, as with "shipkey token".`
	}
	cmd.Args = tokenArgs(opts)
	cmd.ValidArgsFunction = completeLabels(f, 1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.Label = labelArg(args)
		if !header && opts.Exchange.set() {
			opts.Exchange.Scopes = opts.Conn.Scopes // token's one --scope
		}
		if opts.Proof.Method != "" {
			if opts.NoStore {
				return usageErrorf("--dpop-proof signs with a stored key's DPoP key, not with --no-store")
			}
			opts.Label = labelArg(args[:len(args)-1]) // the URL is last
		}
		if err := noStoreFlags(cmd, opts); err != nil {
			return err
		}
		if err := opts.Exchange.check(cmd); err != nil {
			return err
		}
		if opts.MinValid < 0 {
			return usageErrorf("--min-valid must not be negative (see: %s --help)", cmd.CommandPath())
		}
		if err := tokenOutputFlags(cmd, opts); err != nil {
			return err
		}
		if runF != nil {
			return runF(cmd.Context(), opts)
		}
		if opts.Proof.Method != "" {
			return tokenProofRun(cmd.Context(), opts)
		}
		return tokenRun(cmd.Context(), opts)
	}
	cmd.Flags().DurationVar(&opts.MinValid, "min-valid", 0, "hand out a token valid for at least this long (e.g. 5m), renewing first")
	cmd.Flags().BoolVar(&opts.ForceRefresh, "force-refresh", false, "renew the token now, even when it looks valid (one the server revoked)")
	opts.Proof.add(cmd)
	if header {
		cmd.Flags().BoolVar(&opts.CurlConfig, "curl-config", false, "print a curl config line (header = \"…\"); shipkey curl runs curl with it")
	} else {
		cmd.Flags().StringVarP(&opts.Output, "output", "o", outputText, "format: "+strings.Join(tokenOutputs, ", "))
		cmd.Flags().Bool("json", false, "same as --output json")
		cmd.Flags().BoolVar(&opts.NoStore, "no-store", false, "no key, no store: run the grant the flags below name and print its token (for CI)")
		opts.Conn.add(cmd.Flags())
	}
	opts.Exchange.add(cmd.Flags(), header)
	cmd.Long += "\n\n" + exchangeFlagsHelp
	return cmd
}

// noStoreFlags checks --no-store against the other flags: the grant flags
// go with it, a label and the flags about a stored token do not.
func noStoreFlags(cmd *cobra.Command, opts *tokenOptions) error {
	if !opts.NoStore {
		for _, name := range grantFlagNames {
			if name == "scope" && opts.Exchange.set() {
				continue // the scope of the token exchange
			}
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				return usageErrorf("--%s is for --no-store (a key's own settings are kept with it; see: %s --help)", name, cmd.CommandPath())
			}
		}
		return nil
	}
	if opts.Label != "" {
		return usageErrorf("--no-store takes no key label (see: %s --help)", cmd.CommandPath())
	}
	for _, name := range []string{"min-valid", "force-refresh", "audience", "resource", "requested-token-type"} {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s is about a stored token; --no-store always gets a new one", name)
		}
	}
	if opts.Conn.DPoP {
		// The DPoP key would die with the process, and every call to the
		// API needs a proof signed with it: the token would be useless.
		return usageErrorf("--dpop binds the token to a key that --no-store does not keep, so no API call could prove it; keep a key instead (shipkey keys new --dpop)")
	}
	var missing []string
	grant, method, err := opts.Conn.check(cmd, &missing)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return usageErrorf("missing %s (see: %s --help)", strings.Join(missing, ", "), cmd.CommandPath())
	}
	opts.Conn.Grant, opts.Conn.ClientAuth = string(grant), string(method)
	return nil
}

// tokenNoStoreRun is token --no-store: one grant, the token printed.
func tokenNoStoreRun(ctx context.Context, opts *tokenOptions) error {
	method := auth.ClientAuthMethod(opts.Conn.ClientAuth)
	conn := opts.Conn.connection(method)
	if err := conn.Validate(); err != nil {
		return err
	}
	clientKey, clientCert, err := opts.Conn.readClientFiles()
	if err != nil {
		return err
	}
	grant := auth.GrantType(opts.Conn.Grant)
	var secret, password string
	if conn.AuthMethod().UsesSecret() {
		secret, err = readSecret(opts.IO, opts.Getenv, secretSource{
			What: "client secret", Env: envClientSecret, Prompt: text.Trusted("Client secret: "),
			Hint: "set " + envClientSecret + " (or pass --public-client for a client without one)",
		})
		if err != nil {
			return err
		}
		opts.Secrets.Add(secret)
	}
	if grant.Or() == auth.GrantPassword {
		if password, err = readSecret(opts.IO, opts.Getenv, userPassword(opts.Conn.Username, false)); err != nil {
			return err
		}
		opts.Secrets.Add(password)
	}
	def := store.Definition{Connection: conn, Grant: grant}
	opts.Conn.assertionSources(&def)
	if err := store.CheckAssertionSources(&def); err != nil {
		return err
	}
	ca, err := store.OneShotClientAuth(store.NewKey{Definition: def, ClientSecret: secret, ClientKey: clientKey, ClientCert: clientCert})
	if err != nil {
		return err
	}
	client, err := opts.Auth()
	if err != nil {
		return err
	}
	ts, err := client.Obtain(ctx, grant, auth.Request{
		Conn: conn, ClientAuth: ca, Username: opts.Conn.Username, Password: password,
		CallbackPort: opts.Conn.CallbackPort, Wait: opts.Conn.BrowserWait, Prompt: newPrompter(opts.IO, opts.Getenv),
		Assertion: def.GrantAssertion(),
	})
	if err != nil {
		return interrupted(ctx, err)
	}
	opts.Secrets.Add(ts.AccessToken, ts.RefreshToken, ts.IDToken)
	return writeToken(opts.IO.Out, opts.Output, "", "", auth.Exchange{}, ts)
}

// tokenOutputFlags checks --output and folds --json into it.
func tokenOutputFlags(cmd *cobra.Command, opts *tokenOptions) error {
	if fl := cmd.Flags().Lookup("json"); fl != nil && fl.Changed && fl.Value.String() == "true" {
		if cmd.Flags().Changed("output") {
			return usageErrorf("--json and --output: give one (see: %s --help)", cmd.CommandPath())
		}
		opts.Output = outputJSON
	}
	if opts.Output != "" && !slices.Contains(tokenOutputs, opts.Output) {
		return usageErrorf("--output %s is not a format; use %s (see: %s --help)", text.ShellQuote(opts.Output), strings.Join(tokenOutputs, ", "), cmd.CommandPath())
	}
	return nil
}

// handOut is what token (or header) hands out, for the audit trail: the
// token, the header, or kubectl's exec credential.
func (opts *tokenOptions) handOut() *keys.HandOut {
	switch {
	case opts.Header:
		return handOut(audit.Header, "header")
	case opts.Output == outputExecCredential:
		return handOut(audit.Token, "kubectl")
	default:
		return handOut(audit.Token, "token")
	}
}

func tokenRun(ctx context.Context, opts *tokenOptions) error {
	if opts.NoStore {
		return tokenNoStoreRun(ctx, opts)
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	var x auth.Exchange
	if opts.Exchange.set() {
		x = opts.Exchange.exchange()
	}
	var jkt string // the key's DPoP key thumbprint
	tok, err := newKeys(st, opts.Team, opts.IO, opts.Secrets, opts.Now, nil).Token(ctx, opts.Label, keys.TokenOptions{
		MinValid: opts.MinValid, Force: opts.ForceRefresh, Exchange: x, HandOut: opts.handOut(),
		Local: opts.dpopCheck(st, x, &jkt),
	})
	if err != nil {
		return err
	}
	if !x.IsZero() && opts.Header && strings.EqualFold(tok.TokenSet.TokenType, auth.DPoPTokenType) {
		return dpopHeaderError(tok.Name)
	}
	if opts.Header {
		line, err := opts.headerLine(tok.TokenSet)
		if err != nil {
			return err
		}
		_, err = io.WriteString(opts.IO.Out, line)
		return err
	}
	return writeToken(opts.IO.Out, opts.Output, tok.Name, jkt, x, tok.TokenSet)
}

// dpopCheck is token's check of a local key before its token is handed
// out: a DPoP-bound token (not exchanged) is never handed out as a bare
// header, and its JSON names the key's DPoP key (the thumbprint, in jkt).
func (opts *tokenOptions) dpopCheck(st *store.Store, x auth.Exchange, jkt *string) func(store.Key) error {
	return func(key store.Key) (err error) {
		if key.Connection.DPoP && x.IsZero() {
			if opts.Header {
				return dpopHeaderError(key.Label)
			}
			if opts.Output == outputJSON {
				*jkt, _, err = st.Binding(key.Label)
			}
		}
		return err
	}
}

// headerLine is token --header's line: for curl's config (--curl-config),
// or the header as it is. It is data for a script (the token whole), not
// prose.
func (opts *tokenOptions) headerLine(ts *auth.TokenSet) (string, error) {
	if opts.CurlConfig {
		return curlConfigHeader(ts)
	}
	return "Authorization: " + ts.Header() + "\n", nil
}

// logoutOptions ends a key's session.
type logoutOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	Label string
	// Team is the team engine, for "T/LABEL".
	Team func() (team.Engine, error)
}

func newCmdLogout(f *factory, runF func(context.Context, *logoutOptions) error) *cobra.Command {
	opts := &logoutOptions{IO: f.IO, Now: f.Now, Store: f.Store, Team: f.engine()}
	return &cobra.Command{
		Use:   "logout [LABEL]",
		Short: "End the key's session at the server and drop its tokens (the key stays)",
		Long: `End the key's session at the server with whatever it offers (the realm's
logout endpoint, else token revocation) and drop its tokens here; the key and
its secrets stay, for "shipkey login".

Exit code 0 when the server ended the session or offers no way to (then the
tokens stay valid at the server until they expire, as stderr says), and the
tokens are dropped. 1 when the server refused in a way no retry can change
(the token was not issued for this client, say): the tokens are dropped here
and nothing is pending, and stderr gives the server's words (its session may
live until it expires). 5 when it refused the client's credentials, 6 when it
could not be reached or failed: the key hands out no token, its end is
pending (shipkey status shows it) and its tokens are kept only to end the
session; fix the secret (shipkey keys set-secret) or wait, and run logout
again.

A team key (TEAM/LABEL) is logged out once for the whole team, under the
team-wide lock: the session ends at the server and the team's shared tokens
are deleted, so every member drops its cached token on its next "token". A
key whose grant runs unattended (client credentials, a kept password) gets
new tokens on the next "token" anywhere; "shipkey login TEAM/LABEL" does it
now. When the server refuses or cannot be reached, the team's tokens are kept
(the session is alive) and the exit code is 1; 4 when etcd did not answer.`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return logoutRun(cmd.Context(), opts)
		},
	}
}

func logoutRun(ctx context.Context, opts *logoutOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, opts.Team, opts.IO, nil, opts.Now, nil)
	ref, err := svc.Find(opts.Label)
	if err != nil {
		return err
	}
	res, err := svc.EndSession(ctx, ref)
	if err != nil && auth.KindOf(err) == auth.KindUnknown {
		return err // a local failure (or etcd's): nothing was dropped
	}
	if res.Already {
		opts.IO.ErrText().Linef("%s was already logged out; no session to end (%s)", res.Subject.Title(), res.Next)
		return nil
	}
	var refused *store.EndRefusedError
	var kept *keys.SessionKeptError
	switch {
	case errors.As(err, &refused), errors.As(err, &kept):
		// A refusal no retry can change (the tokens are dropped here and
		// nothing is pending), or a team's session kept whole: the error
		// says what was and was not ended.
		return &exitError{code: exitFailure, err: err}
	case err != nil:
		return fmt.Errorf("%s here (no token is handed out), but %s; ending it is pending, its tokens kept only for that: run shipkey logout %s to try again: %w",
			"Logged out "+res.Subject.String(), keys.EndFailure(err), text.ShellQuote(res.Subject.Label), err)
	}
	return reportEnd(opts.IO.ErrText(), "Logged out "+res.Subject.String()+res.Subject.Reach(), res.Dropped, res.Next, res.Key, res.End, nil, opts.Now())
}

// reportEnd says what the server did when a key's session was ended (logout,
// keys rm), after the local cleanup done says: ended it (exit 0), offers no
// way to (exit 0, with a warning that the tokens stay valid at the server
// until they expire), or refused or could not be reached (exit 1).
func reportEnd(w text.Writer, done, dropped, next string, key store.Key, res auth.EndResult, err error, now time.Time) error {
	switch {
	case err != nil:
		what := "the server refused to end the session"
		switch auth.KindOf(err) {
		case auth.KindNetwork, auth.KindTimeout, auth.KindTLS:
			what = "the server could not be reached to end the session"
		}
		// Exit 1, not 5 or 6: what was asked is done here, and running the
		// command again has nothing left to retry.
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %s, but %s, so its tokens may stay valid there until they expire: %w", done, dropped, what, err)}
	case res.Ended():
		how := "ended the session at the server (" + res.Via + ")"
		if res.AlreadyEnded {
			how = "the server said the session had already ended"
		}
		w.Linef("%s: %s (%s)", done, how, next)
	default:
		until := ""
		if exp := key.Token.AccessExpiry(); !exp.IsZero() && now.Before(exp) {
			until = " (the access token until " + text.Stamp(exp) + ")"
		}
		w.Linef("%s: %s; the server offers no way to end a session, so the tokens stay valid there until they expire%s (%s)",
			done, dropped, until, next)
	}
	return nil
}

// signedInAs is ", signed in as WHO" after an interactive grant whose tokens
// name the person (the ID token's or a JWT access token's
// preferred_username and email), so a person sees whose account the key
// now uses; "" otherwise.
func signedInAs(grant auth.GrantType, ts *auth.TokenSet, now time.Time) text.Clean {
	if grant != auth.GrantAuthCode && grant != auth.GrantDeviceCode {
		return text.Clean{}
	}
	if who := auth.SignedInAs(ts, now).Shown(); !who.IsEmpty() {
		return text.Concat(text.Trusted(", signed in as "), who)
	}
	return text.Clean{}
}
