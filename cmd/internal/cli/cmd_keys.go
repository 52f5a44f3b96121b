package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/tui"
)

func newCmdKeys(f *factory) *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:   "keys",
		Short: "Get, list, rename and remove API keys",
	})
	cmd.AddCommand(
		makesRequests(newCmdKeysNew(f, nil)),
		newCmdKeysList(f, nil),
		makesRequests(newCmdKeysRm(f, nil)),
		newCmdKeysRename(f, nil),
		newCmdKeysDefault(f, nil),
		newCmdKeysSetSecret(f, nil),
		newCmdKeysSet(f, nil),
		newCmdKeysShow(f, nil),
	)
	return cmd
}

// keysNewOptions is "Get API Key".
type keysNewOptions struct {
	IO      *iostreams
	Getenv  func(string) string
	Now     func() time.Time
	Store   func() (*store.Store, error)
	Secrets *secretSet
	Team    func() (team.Engine, error)

	TeamName         string // --team: a team key, shared through etcd
	Label            string
	grantFlags       // the server, the client and the grant
	RememberPassword bool
	PasswordStdin    bool
	SecretStdin      bool // --client-secret-stdin

	// GenerateClientKey (--generate-client-key) makes an EC P-256 client
	// key and prints its public JWKS.
	GenerateClientKey bool

	APIURL string // --api-url: the API's base URL, for paths given to api and curl
}

// grantFlags name a server, a client and a grant: the flags of keys new,
// and of token --no-store.
type grantFlags struct {
	Grant        string
	AuthURL      string
	Realm        string
	TokenURL     string
	Issuer       string
	ClientID     string
	Username     string
	Scopes       []string
	BasicAuth    bool
	PublicClient bool
	ClientAuth   string // --client-auth; --basic-auth and --public-client are its aliases
	CallbackPort int
	BrowserWait  time.Duration // --browser-timeout

	// Hardened realms.
	ClientKeyFile  string // --client-key: PEM or JWK (keys new imports it into the secrets backend)
	ClientKeyID    string // --client-key-id: the assertions' kid (default the RFC 7638 thumbprint)
	ClientCertFile string // --client-cert: PEM, for tls_client_auth and self_signed_tls_client_auth
	DPoP           bool   // --dpop: DPoP-bound tokens
	PAR            bool   // --par: push authorization requests when the realm has a PAR endpoint

	// Key-less logins: where the jwt-bearer grant's assertion and the
	// client_assertion method's are read (a file, or a command), again at
	// every renewal. The assertion itself never goes on a command line.
	AssertionFile, AssertionCmd             string
	ClientAssertionFile, ClientAssertionCmd string
}

// add defines the grant flags on fl.
func (g *grantFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&g.Grant, "grant", string(auth.GrantPassword), "how to obtain tokens: "+grantNames())
	fl.StringVar(&g.AuthURL, "auth-url", "", "base URL of the authorization server, e.g. https://auth.example.com")
	fl.StringVar(&g.Realm, "realm", "", "Keycloak realm (default \"master\")")
	fl.StringVar(&g.TokenURL, "token-url", "", "token endpoint, overriding the realm's")
	fl.StringVar(&g.Issuer, "issuer", "", "OIDC issuer; endpoints come from its discovery document")
	fl.StringVar(&g.ClientID, "client-id", "", "client id of the registered client application")
	fl.StringVar(&g.Username, "username", "", "user of the client application (password grant); with device-code or authcode, the only user whose sign-in is accepted")
	fl.StringArrayVar(&g.Scopes, "scope", nil, "scope to request (repeatable, or space-separated)")
	fl.StringVar(&g.ClientAuth, "client-auth", "", "how the client authenticates: "+clientAuthNames()+" (default: the secret in the form, HTTP Basic when the server wants it)")
	fl.BoolVar(&g.BasicAuth, "basic-auth", false, "send the client credentials with HTTP Basic instead of in the form (--client-auth client_secret_basic)")
	fl.BoolVar(&g.PublicClient, "public-client", false, "the client has no secret: none is asked for or sent (--client-auth none)")
	fl.DurationVar(&g.BrowserWait, "browser-timeout", auth.DefaultBrowserWait, "authcode: how long to wait for the browser to come back")
	fl.IntVar(&g.CallbackPort, "callback-port", 0, "authcode: listen on this port (redirect http://127.0.0.1:N/callback); default any free port")
	fl.StringVar(&g.ClientKeyFile, "client-key", "", "the client's private key (PEM or JWK) for private_key_jwt and the TLS methods; kept in the secrets backend")
	fl.StringVar(&g.ClientKeyID, "client-key-id", "", "kid of the client's assertions (default: the key's RFC 7638 thumbprint)")
	fl.StringVar(&g.ClientCertFile, "client-cert", "", "the client certificate (PEM) for tls_client_auth / self_signed_tls_client_auth, with --client-key")
	fl.BoolVar(&g.DPoP, "dpop", false, "bind the tokens to a DPoP key of this key's own (RFC 9449)")
	fl.BoolVar(&g.PAR, "par", true, "authcode: push the authorization request when the realm has a PAR endpoint (RFC 9126)")
	fl.StringVar(&g.AssertionFile, "assertion-file", "", "jwt-bearer: file holding a trusted issuer's token (a CI identity token), read again at every renewal")
	fl.StringVar(&g.AssertionCmd, "assertion-cmd", "", "jwt-bearer: command (split at spaces, no shell) that prints such a token, run again at every renewal")
	fl.StringVar(&g.ClientAssertionFile, "client-assertion-file", "", "client_assertion: file holding the token that authenticates the client, read again at every request")
	fl.StringVar(&g.ClientAssertionCmd, "client-assertion-cmd", "", "client_assertion: command (split at spaces, no shell) that prints it, run again at every request")
}

// assertionSources puts the flags' assertion sources into d.
func (g *grantFlags) assertionSources(d *store.Definition) {
	d.AssertionFile, d.AssertionCmd = g.AssertionFile, g.AssertionCmd
	d.ClientAssertionFile, d.ClientAssertionCmd = g.ClientAssertionFile, g.ClientAssertionCmd
}

// grantFlagNames are the flags add defines.
var grantFlagNames = []string{"grant", "auth-url", "realm", "token-url", "issuer", "client-id", "username", "scope",
	"client-auth", "basic-auth", "public-client", "browser-timeout", "callback-port",
	"client-key", "client-key-id", "client-cert", "dpop", "par",
	"assertion-file", "assertion-cmd", "client-assertion-file", "client-assertion-cmd"}

// check finds what is missing or contradictory in the grant flags, as a
// usage error; missing collects the flags not given (the caller adds its
// own and reports them all at once).
func (g *grantFlags) check(cmd *cobra.Command, missing *[]string) (auth.GrantType, auth.ClientAuthMethod, error) {
	if g.AuthURL == "" && g.TokenURL == "" && g.Issuer == "" {
		*missing = append(*missing, "--auth-url (or --token-url or --issuer)")
	}
	grant, err := auth.GrantFor(auth.GrantType(g.Grant))
	if err != nil {
		return "", "", usageErrorf("--grant %s is not one of %s", text.ShellQuote(g.Grant), grantNames())
	}
	gt := grant.Type()
	*missing = append(*missing, missingFlags(cmd, "client-id")...)
	if err := checkUserFlags(cmd, gt, missing); err != nil {
		return "", "", err
	}
	if err := g.checkCallbackPort(cmd, gt); err != nil {
		return "", "", err
	}
	method, err := g.clientAuthMethod(flagSetTrue(cmd, "generate-client-key"))
	if err != nil {
		return "", "", err
	}
	if method == auth.ClientAuthNone && gt == auth.GrantClientCredentials {
		return "", "", usageErrorf("--grant client-credentials needs the client's secret: drop --public-client")
	}
	if err := g.checkAssertions(gt, method, missing); err != nil {
		return "", "", err
	}
	if g.TokenURL != "" && g.Issuer != "" {
		return "", "", usageErrorf("--token-url and --issuer exclude each other (see: %s --help)", cmd.CommandPath())
	}
	return gt, method, nil
}

// checkUserFlags asks for --username with the password grant and refuses
// the password grant's flags with the others (and --username where no
// person signs in: the assertion names its subject).
func checkUserFlags(cmd *cobra.Command, gt auth.GrantType, missing *[]string) error {
	if gt == auth.GrantPassword {
		*missing = append(*missing, missingFlags(cmd, "username")...)
		return nil
	}
	flags := []string{"remember-password", "password-stdin"}
	if gt == auth.GrantClientCredentials || gt == auth.GrantJWTBearer {
		flags = append(flags, "username")
	}
	for _, f := range flags {
		if flagChanged(cmd, f) {
			return usageErrorf("--%s is for the password grant, not --grant %s", f, gt)
		}
	}
	return nil
}

// checkCallbackPort refuses --callback-port outside authcode or outside
// the TCP ports.
func (g *grantFlags) checkCallbackPort(cmd *cobra.Command, gt auth.GrantType) error {
	if cmd.Flags().Changed("callback-port") && gt != auth.GrantAuthCode {
		return usageErrorf("--callback-port is for --grant %s", auth.GrantAuthCode)
	}
	if g.CallbackPort < 0 || g.CallbackPort > 65535 {
		return usageErrorf("--callback-port %d is not a TCP port (1-65535)", g.CallbackPort)
	}
	return nil
}

// assertionSource is one pair of flags naming where an assertion comes
// from: needed when the grant or client authentication takes it.
type assertionSource struct {
	file, cmd, flags, what string
	needed                 bool
}

// checkAssertions asks for the assertion sources the grant and method
// need and refuses the others, and both of one pair.
func (g *grantFlags) checkAssertions(gt auth.GrantType, method auth.ClientAuthMethod, missing *[]string) error {
	for _, src := range []assertionSource{
		{g.AssertionFile, g.AssertionCmd, "--assertion-file FILE or --assertion-cmd CMD", "--grant " + string(auth.GrantJWTBearer), gt == auth.GrantJWTBearer},
		{g.ClientAssertionFile, g.ClientAssertionCmd, "--client-assertion-file FILE or --client-assertion-cmd CMD", "--client-auth " + string(auth.ClientAssertion), method.Needs().External},
	} {
		switch given := src.file != "" || src.cmd != ""; {
		case src.needed && !given:
			*missing = append(*missing, src.flags)
		case !src.needed && given:
			return usageErrorf("%s are for %s", strings.Replace(src.flags, " or ", " and ", 1), src.what)
		case src.file != "" && src.cmd != "":
			return usageErrorf("pass %s, not both", src.flags)
		}
	}
	return nil
}

// flagChanged says whether cmd has the flag name and it was given.
func flagChanged(cmd *cobra.Command, name string) bool {
	fl := cmd.Flags().Lookup(name)
	return fl != nil && fl.Changed
}

// flagSetTrue says whether cmd's boolean flag name was given as true.
func flagSetTrue(cmd *cobra.Command, name string) bool {
	return flagChanged(cmd, name) && cmd.Flags().Lookup(name).Value.String() == "true"
}

// clientAuthMethod is the client authentication the flags name:
// --client-auth or its aliases; when none is given, private_key_jwt for a
// client key (given, or generated when generate is set), tls_client_auth
// when a certificate comes with it.
func (g *grantFlags) clientAuthMethod(generate bool) (auth.ClientAuthMethod, error) {
	method, err := clientAuthFlag(g)
	if err != nil {
		return "", err
	}
	if method == "" && (g.ClientKeyFile != "" || generate) {
		method = auth.PrivateKeyJWT
		if g.ClientCertFile != "" {
			method = auth.TLSClientAuth
		}
	}
	return method, nil
}

// connection is the connection the flags name, authenticating by method.
func (g *grantFlags) connection(method auth.ClientAuthMethod) auth.Connection {
	var scopes []string
	for _, s := range g.Scopes {
		scopes = append(scopes, strings.Fields(s)...)
	}
	return auth.Connection{
		AuthURL:     g.AuthURL,
		Realm:       g.Realm,
		ClientID:    g.ClientID,
		TokenURL:    g.TokenURL,
		Issuer:      g.Issuer,
		Scopes:      scopes,
		ClientAuth:  method,
		ClientKeyID: g.ClientKeyID,
		DPoP:        g.DPoP,
		NoPAR:       !g.PAR,
	}
}

func newCmdKeysNew(f *factory, runF func(context.Context, *keysNewOptions) error) *cobra.Command {
	opts := &keysNewOptions{IO: f.IO, Getenv: f.Getenv, Now: f.Now, Store: f.Store, Secrets: f.Secrets, Team: f.Team}
	cmd := &cobra.Command{
		Use:   "new --label L --auth-url URL --client-id ID [--grant G] [--username U]",
		Short: "Get an API key (run a grant and keep the key)",
		Long: `Get an API key: obtain tokens from the realm by a grant and keep the key
under a label. --grant is one of:

  password            username and password (the default; --username)
  client-credentials  the client's own service account: no person, renews
                      itself at expiry
  device-code         approve a code on another device (RFC 8628): the code
                      and the URL are printed on stderr
  authcode            sign in with a browser (PKCE) that comes back to
                      http://127.0.0.1 (--callback-port to fix the port)
  jwt-bearer          a trusted issuer's token (a CI job's identity token)
                      for the key's tokens (RFC 7523): --assertion-file or
                      --assertion-cmd, read again at every renewal

A client whose realm accepts such a token in place of a secret (Keycloak's
federated client authentication) takes --client-auth client_assertion with
--client-assertion-file or --client-assertion-cmd. Only where the token is
is kept, never the token; a command is split at spaces and run without a
shell.

The client secret comes from SHIPKEY_CLIENT_SECRET, --client-secret-stdin
(one line) or a hidden prompt; --public-client asks for none. The password
comes from SHIPKEY_PASSWORD, --password-stdin (one line) or a hidden prompt.
No flag takes a secret. The browser grants open the URL with $BROWSER (or
the desktop's opener) and always print it.`,
		Example: `  SHIPKEY_CLIENT_SECRET=… shipkey keys new --label prod \
    --auth-url https://auth.example.com --client-id shipping-api --username me
  pass show shipping | shipkey keys new --label prod --password-stdin …
  SHIPKEY_CLIENT_SECRET=… shipkey keys new --grant client-credentials --label ci \
    --auth-url https://auth.example.com --client-id shipping-ci
  shipkey keys new --grant jwt-bearer --label ci --auth-url https://auth.example.com \
    --client-id shipping-ci --client-auth client_assertion \
    --assertion-file /var/run/ci/token --client-assertion-file /var/run/ci/token`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysNewRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Label, "label", "", "label of the new key (unique)")
	opts.add(fl)
	fl.BoolVar(&opts.RememberPassword, "remember-password", false, "keep the password with the key's secrets to log in again unattended")
	fl.BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the password from stdin (one line)")
	fl.BoolVar(&opts.SecretStdin, "client-secret-stdin", false, "read the client secret from stdin (one line)")
	fl.BoolVar(&opts.GenerateClientKey, "generate-client-key", false, "make an EC P-256 client key for private_key_jwt and print its public JWKS to register with the realm")
	fl.StringVar(&opts.TeamName, "team", "", "make it a team key, shared end-to-end encrypted through the team's etcd (addressed TEAM/LABEL)")
	fl.StringVar(&opts.APIURL, "api-url", "", "base URL of the API the tokens are for (shipkey api KEY /path resolves against it)")
	return cmd
}

// validate finds what is missing or contradictory in keys new's flags, as
// a usage error; every missing flag in one message.
func (opts *keysNewOptions) validate(cmd *cobra.Command) error {
	// Every missing flag in one message.
	missing := missingFlags(cmd, "label")
	if opts.PublicClient && (opts.SecretStdin || opts.BasicAuth) {
		return usageErrorf("--public-client has no secret: drop --client-secret-stdin and --basic-auth")
	}
	grantType, method, err := opts.check(cmd, &missing)
	if err != nil {
		return err
	}
	if method == auth.ClientAuthNone && opts.SecretStdin {
		return usageErrorf("--client-auth none has no secret: drop --client-secret-stdin")
	}
	if opts.SecretStdin && opts.PasswordStdin {
		return usageErrorf("--client-secret-stdin and --password-stdin both read stdin; pass one secret in its variable")
	}
	if len(missing) > 0 {
		return usageErrorf("missing %s (see: %s --help)", strings.Join(missing, ", "), cmd.CommandPath())
	}
	if l := strings.TrimSpace(opts.Label); !text.IsClean(l) {
		return usageErrorf("--label %s contains control characters; choose another", text.ShellQuote(l))
	}
	return opts.checkTeam(grantType, method)
}

// checkTeam refuses, for a team key, the grants and client
// authentications that need a person or this machine's assertion.
func (opts *keysNewOptions) checkTeam(grantType auth.GrantType, method auth.ClientAuthMethod) error {
	if opts.TeamName == "" {
		return nil
	}
	if grantType == auth.GrantJWTBearer || method.Needs().External {
		return usageErrorf("--team keys renew on every member's machine, and the assertion file or command is this machine's: drop --team")
	}
	if grant, _ := auth.GrantFor(grantType); !grant.Unattended(auth.Kept{Password: true}) {
		return usageErrorf("--team keys renew on every member's machine without a person: use --grant password or client-credentials, not %s", grant.Type())
	}
	return nil
}

// clientAuthFlag is the method --client-auth names, or its aliases
// --basic-auth and --public-client; "" when none is given. Two that
// disagree are a usage error.
func clientAuthFlag(opts *grantFlags) (auth.ClientAuthMethod, error) {
	m, err := auth.ParseClientAuthMethod(opts.ClientAuth)
	if err != nil {
		return "", usageErrorf("--client-auth %s is not one of %s", text.ShellQuote(opts.ClientAuth), clientAuthNames())
	}
	for _, alias := range []struct {
		on   bool
		flag string
		m    auth.ClientAuthMethod
	}{{opts.BasicAuth, "--basic-auth", auth.ClientSecretBasic}, {opts.PublicClient, "--public-client", auth.ClientAuthNone}} {
		if !alias.on {
			continue
		}
		if m != "" && m != alias.m {
			return "", usageErrorf("%s means --client-auth %s, not %s", alias.flag, alias.m, m)
		}
		m = alias.m
	}
	return m, nil
}

// clientAuthNames lists the client authentication methods for help and
// messages.
func clientAuthNames() string {
	var names []string
	for _, m := range auth.ClientAuthMethods() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}

// grantNames lists the grants for help and messages.
func grantNames() string {
	var names []string
	for _, g := range auth.Grants() {
		names = append(names, string(g))
	}
	return strings.Join(names, ", ")
}

func keysNewRun(ctx context.Context, opts *keysNewOptions) error {
	method, err := opts.clientAuthMethod(opts.GenerateClientKey)
	if err != nil {
		return err
	}
	conn := opts.connection(method)
	apiURL, err := store.CheckAPIURL(opts.APIURL)
	if err != nil {
		return usageErrorf("--api-url %v", err)
	}
	clientKey, clientCert, err := opts.readClientFiles()
	if err != nil {
		return err
	}
	// Check everything that can be checked before asking for anything secret:
	// the connection's shape, the store, and that the label is free.
	if err := conn.Validate(); err != nil {
		return err
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	eng, err := opts.destination(st)
	if err != nil {
		return err
	}
	sec, err := opts.readNewKeySecrets(method)
	if err != nil {
		return err
	}
	def := store.Definition{Grant: auth.GrantType(opts.Grant), Connection: conn, Username: opts.Username, APIURL: apiURL}
	if opts.TeamName != "" {
		return opts.createTeamKey(ctx, eng, def, sec)
	}
	def.CallbackPort, def.RememberPassword = opts.CallbackPort, opts.RememberPassword
	opts.assertionSources(&def)
	key, ts, err := st.Create(ctx, store.NewKey{Label: opts.Label, Definition: def, ClientSecret: sec.clientSecret, Password: sec.password, Prompt: newPrompter(opts.IO, opts.Getenv), Wait: opts.BrowserWait,
		ClientKey: clientKey, ClientCert: clientCert, GenerateClientKey: opts.GenerateClientKey, OnClientKey: registerClientKey(opts.IO)})
	if err != nil {
		return interrupted(ctx, err)
	}
	opts.Secrets.Add(ts.AccessToken, ts.RefreshToken, ts.IDToken)
	opts.IO.ErrText().Linef("Got API key %s (%s)%s", key.Shown(), lifetimes(key, opts.Now()), signedInAs(key.Grant, ts, opts.Now()))
	return nil
}

// destination checks where the new key goes before any secret is read: the
// team (whose engine it returns) exists, or the label is free here.
func (opts *keysNewOptions) destination(st *store.Store) (team.Engine, error) {
	label := strings.TrimSpace(opts.Label)
	if opts.TeamName == "" {
		_, err := st.Key(label)
		switch {
		case err == nil:
			return nil, fmt.Errorf("the label %s is already in use; choose another (see: shipkey keys list)", text.ShellQuote(label))
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		return nil, nil
	}
	if _, err := st.Team(opts.TeamName); err != nil {
		return nil, err
	}
	return opts.Team() // before any secret is read: it may hand the command on
}

// newKeySecrets are the secrets keys new reads for the key.
type newKeySecrets struct{ clientSecret, password string }

// readNewKeySecrets reads the client secret (when method uses one) and the
// password (password grant), each from its variable, stdin or a prompt.
func (opts *keysNewOptions) readNewKeySecrets(method auth.ClientAuthMethod) (newKeySecrets, error) {
	var sec newKeySecrets
	var err error
	if method.UsesSecret() {
		sec.clientSecret, err = readSecret(opts.IO, opts.Getenv, secretSource{
			What:      "client secret",
			Env:       envClientSecret,
			FromStdin: opts.SecretStdin,
			StdinFlag: "--client-secret-stdin",
			Prompt:    text.Trusted("Client secret: "),
			Hint:      "set " + envClientSecret + " or pass --client-secret-stdin (or --public-client for a client without one)",
		})
		if err != nil {
			return sec, err
		}
		opts.Secrets.Add(sec.clientSecret)
	}
	if auth.GrantType(opts.Grant).Or() == auth.GrantPassword {
		sec.password, err = readSecret(opts.IO, opts.Getenv, userPassword(opts.Username, opts.PasswordStdin))
		if err != nil {
			return sec, err
		}
		opts.Secrets.Add(sec.password)
	}
	return sec, nil
}

// createTeamKey creates the key in its team, through the team's engine.
func (opts *keysNewOptions) createTeamKey(ctx context.Context, eng team.Engine, def store.Definition, sec newKeySecrets) error {
	tk, err := eng.CreateKey(ctx, opts.TeamName, team.NewKey{Label: strings.TrimSpace(opts.Label), Definition: def, ClientSecret: sec.clientSecret, Password: sec.password})
	if err != nil {
		return err
	}
	opts.IO.ErrText().Linef("Got team API key %s (%s), shared with every member of %s", tk.Address(), lifetimes(keys.TeamStoreKey(tk), opts.Now()), opts.TeamName)
	return nil
}

// keysListOptions lists keys.
type keysListOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	// Team is the team engine, for the teams this machine joined (nil:
	// none linked).
	Team func() (team.Engine, error)
	JSON bool
}

func newCmdKeysList(f *factory, runF func(*keysListOptions) error) *cobra.Command {
	opts := &keysListOptions{IO: f.IO, Now: f.Now, Store: f.Store, Team: f.engine()}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List API keys (the default key is marked *)",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return keysListRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	return cmd
}

// keyJSON is one key in `keys list --json`: its definition, every field of
// store.Definition under config.toml's names (auth_url, client_id,
// api_url, scopes, …: a field added there shows here too), and what
// shipkey knows of its tokens.
type keyJSON struct {
	Label            string  `json:"label"`
	APIKey           string  `json:"api_key"`
	LastUsed         *string `json:"last_used"`
	AccessExpiresAt  *string `json:"access_expires_at"`
	RefreshExpiresAt *string `json:"refresh_expires_at"`
	store.Definition
	// Realm, Grant and Username are always present, the realm and the grant
	// as they take effect (the definition omits the default ones).
	Realm    string `json:"realm"`
	Grant    string `json:"grant"`
	Username string `json:"username"`
	Default  bool   `json:"default"`
	Status   string `json:"status"`
}

func keysListRun(opts *keysListOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	now := opts.Now()
	// Buffered, one key at a time from the index: at 100k keys unbuffered
	// writes were most of the cost, and a list built first most of the memory.
	// Team keys (a few, from the team's store) come after the local ones.
	bw := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	svc := newKeys(st, opts.Team, opts.IO, nil, opts.Now, nil)
	return svc.Walk(context.Background(), "", keys.Live, func(each keys.Each) error {
		if opts.JSON {
			arr := &jsonArray{w: bw}
			if err := each(func(k store.Key) error { return arr.add(keyToJSON(k, now)) }); err != nil {
				return err
			}
			return arr.close()
		}
		// The app's columns (tui.KeyColumns), with times in words, aligned.
		head := []string{""}
		for _, c := range tui.KeyColumns {
			head = append(head, strings.ToUpper(c.Title))
		}
		// Reused: writeTable keeps a row's bytes, not its cells.
		var cells []string
		var row tui.KeyRow
		n, err := writeTable(bw, head, each, func(k store.Key, _ int) []string {
			cells = keyCells(cells[:0], &row, k, now)
			return cells
		}, tableKeep, spillFile)
		if err == nil && n == 0 {
			opts.IO.ErrText().Line(text.Trusted("No API keys yet. Get one with: shipkey keys new (see: shipkey keys new --help)"))
		}
		return err
	})
}

// keyToJSON is one key of keys list --json.
func keyToJSON(k store.Key, now time.Time) keyJSON {
	status := k.StatusAt(now)
	j := keyJSON{
		Label:      k.Label,
		APIKey:     k.Masked,
		LastUsed:   rfc3339OrNil(k.LastUsed),
		Definition: k.Definition,
		Realm:      k.Connection.RealmName(),
		Grant:      k.Grant.String(),
		Username:   k.Username,
		Default:    k.Default,
		Status:     status.String(),
	}
	if status != store.StatusNoToken {
		j.AccessExpiresAt = rfc3339OrNil(k.Token.AccessExpiry())
		j.RefreshExpiresAt = rfc3339OrNil(k.Token.RefreshExpiresAt)
	}
	return j
}

// keyCells appends to cells one row of the keys table: the default mark,
// then the app's columns; r is where the row is prepared (the columns' cells
// take its address: one the caller reuses is not a new one a key).
func keyCells(cells []string, r *tui.KeyRow, k store.Key, now time.Time) []string {
	*r = tui.NewKeyRow(k)
	mark := " "
	if k.Default {
		mark = "*"
	}
	cells = append(cells, mark)
	for _, c := range tui.KeyColumns {
		cells = append(cells, c.Cell(r, now, tui.Words))
	}
	return cells
}

// keysRmOptions removes a key.
type keysRmOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	Team  func() (team.Engine, error)
	Label string
	Yes   bool
	Force bool
}

func newCmdKeysRm(f *factory, runF func(context.Context, *keysRmOptions) error) *cobra.Command {
	opts := &keysRmOptions{IO: f.IO, Now: f.Now, Store: f.Store, Team: f.engine()}
	cmd := &cobra.Command{
		Use:     "rm LABEL",
		Aliases: []string{"remove"},
		Short:   "Remove an API key and its secrets",
		Long: `Remove an API key and its secrets. On a terminal it asks first unless --yes;
without a terminal --yes is required.

The key's session is ended at the server first, as "shipkey logout" does.
When the server refuses or cannot be reached the key is kept, logged out with
its end pending (exit 1; 6 when the server could not be reached or failed):
run keys rm again to retry, or pass --force to
remove it anyway (its tokens then stay valid at the server until they
expire; exit 1 as well).`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return keysRmRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "remove the key even when its session cannot be ended at the server")
	return cmd
}

func keysRmRun(ctx context.Context, opts *keysRmOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	r, err := newKeys(st, opts.Team, opts.IO, nil, opts.Now, nil).RemoveKey(ctx, opts.Label, keys.RemoveOptions{
		RemoveOptions: store.RemoveOptions{Force: opts.Force}, Yes: opts.Yes, Confirm: func(key store.Key) (bool, error) {
			return confirmRemove(opts.IO, key)
		},
	})
	key := r.Key
	switch {
	case r.Kept:
		return err
	case r.Done != "":
		opts.IO.ErrText().Linef("%s", r.Done)
		return nil
	}
	var pending *store.EndPendingError
	if errors.As(err, &pending) {
		since := ""
		if !key.EndPending.IsZero() {
			since = " (pending since " + text.Stamp(key.EndPending) + ")"
		}
		q := text.ShellQuote(key.Label)
		return fmt.Errorf("%s: %s%s; it hands out no token and its end is pending: run shipkey keys rm %s to try again, or shipkey keys rm %s --force to remove it anyway: %w",
			"Kept "+r.Subject.String(), keys.EndFailure(pending.Err), since, q, q, pending.Err)
	}
	if err != nil && (auth.KindOf(err) == auth.KindUnknown || key.Label == "") {
		return err // a local failure (or no such key): the key is still there
	}
	return reportEnd(opts.IO.ErrText(), "Removed "+r.Subject.String(), "it is gone here", "get a new one with: shipkey keys new", key, r.End, err, opts.Now())
}

// confirmRemove asks on the terminal whether to remove key (keys rm
// without --yes); without a terminal it refuses.
func confirmRemove(ios *iostreams, key store.Key) (bool, error) {
	label := key.Shown()
	if !ios.StdinTTY {
		return false, usageErrorf("not removing API key %s without confirmation: no terminal to ask on; pass --yes", label)
	}
	ios.ErrText().Print(text.Cleanf("Remove API key %s and its secrets? [y/N] ", label))
	answer, err := ios.ReadLine()
	if err != nil {
		answer = ""
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true, nil
	}
	ios.ErrText().Linef("Kept API key %s", label)
	return false, nil
}

// keysRenameOptions renames a key.
type keysRenameOptions struct {
	IO       *iostreams
	Store    func() (*store.Store, error)
	Team     func() (team.Engine, error)
	Label    string
	NewLabel string
}

func newCmdKeysRename(f *factory, runF func(*keysRenameOptions) error) *cobra.Command {
	opts := &keysRenameOptions{IO: f.IO, Store: f.Store, Team: f.engine()}
	return &cobra.Command{
		Use:               "rename LABEL NEW-LABEL",
		Aliases:           []string{"mv"},
		Short:             "Change an API key's label",
		Args:              usageArgs(cobra.ExactArgs(2)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label, opts.NewLabel = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return keysRenameRun(opts)
		},
	}
}

func keysRenameRun(opts *keysRenameOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, opts.Team, opts.IO, nil, nil, nil)
	to, err := svc.RenameKey(context.Background(), opts.Label, opts.NewLabel)
	if err != nil {
		return err
	}
	opts.IO.ErrText().Linef("Renamed %s to %s%s", to.From, to.Label, to.From.Reach())
	return nil
}

// keysSetSecretOptions replaces a key's client secret.
type keysSetSecretOptions struct {
	IO          *iostreams
	Getenv      func(string) string
	Store       func() (*store.Store, error)
	Team        func() (team.Engine, error)
	Secrets     *secretSet
	Label       string
	SecretStdin bool
}

func newCmdKeysSetSecret(f *factory, runF func(*keysSetSecretOptions) error) *cobra.Command {
	opts := &keysSetSecretOptions{IO: f.IO, Getenv: f.Getenv, Store: f.Store, Team: f.engine(), Secrets: f.Secrets}
	cmd := &cobra.Command{
		Use:   "set-secret [T/]LABEL",
		Short: "Replace an API key's client secret (rotated at the realm)",
		Long: `Replace an API key's client secret, after it was rotated at the realm (as after
team remove). The secret comes from SHIPKEY_CLIENT_SECRET, --client-secret-stdin or a
hidden prompt. A team key's is replaced for every member (encrypted and signed for the
roster). The tokens stay; the next renewal uses the new secret.`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = args[0]
			if runF != nil {
				return runF(opts)
			}
			return keysSetSecretRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.SecretStdin, "client-secret-stdin", false, "read the client secret from stdin (one line)")
	return cmd
}

func keysSetSecretRun(ctx context.Context, opts *keysSetSecretOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, opts.Team, opts.IO, opts.Secrets, nil, nil)
	ref, err := svc.Lookup(opts.Label) // first: a team key may hand the command on
	if err != nil {
		return err
	}
	secret, err := readSecret(opts.IO, opts.Getenv, secretSource{
		What:      "client secret",
		Env:       envClientSecret,
		FromStdin: opts.SecretStdin,
		StdinFlag: "--client-secret-stdin",
		Prompt:    text.Cleanf("New client secret for %s: ", opts.Label),
		Hint:      "set " + envClientSecret + " or pass --client-secret-stdin",
	})
	if err != nil {
		return err
	}
	if err := svc.SetClientSecret(ctx, ref, secret); err != nil {
		return err
	}
	opts.IO.ErrText().Linef("Replaced the client secret of %s%s", ref.Subject(), ref.Subject().Reach())
	return nil
}

// keysDefaultOptions sets the default key.
type keysDefaultOptions struct {
	IO    *iostreams
	Store func() (*store.Store, error)
	Label string
}

func newCmdKeysDefault(f *factory, runF func(*keysDefaultOptions) error) *cobra.Command {
	opts := &keysDefaultOptions{IO: f.IO, Store: f.Store}
	return &cobra.Command{
		Use:               "default LABEL",
		Short:             "Make an API key the default (used when no label is given)",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = args[0]
			if runF != nil {
				return runF(opts)
			}
			return keysDefaultRun(opts)
		},
	}
}

func keysDefaultRun(opts *keysDefaultOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	svc := newKeys(st, nil, opts.IO, nil, nil, nil)
	if err := svc.SetDefault(opts.Label); err != nil {
		return svc.Suggest(opts.Label, err)
	}
	opts.IO.ErrText().Linef("API key %s is now the default", opts.Label)
	return nil
}

// readClientFiles reads --client-key and --client-cert once: from then on
// they live in the secrets backend, never read from the files again.
func (g *grantFlags) readClientFiles() (key, cert []byte, err error) {
	read := func(flag, path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, text.ShellQuote(path), errors.Unwrap(err))
		}
		return b, nil
	}
	if key, err = read("--client-key", g.ClientKeyFile); err != nil {
		return nil, nil, err
	}
	if cert, err = read("--client-cert", g.ClientCertFile); err != nil {
		return nil, nil, err
	}
	return key, cert, nil
}

// registerClientKey prints a generated client key's public JWKS on stdout
// and waits for the go-ahead, one line on stdin, once the key is
// registered with the realm, before the grant runs: Enter at a terminal; a
// script reads the JWKS, registers it (e.g. through the realm's admin API)
// and then writes a line. Stdin closed without one stores nothing.
func registerClientKey(ios *iostreams) func(jwks []byte) error {
	return func(jwks []byte) error {
		// The public key set is data for a script to register: as it is.
		fmt.Fprintf(ios.Out, "%s\n", jwks)
		goAhead := "press Enter"
		if !ios.StdinTTY {
			goAhead = "write a line to stdin"
		}
		ios.ErrText().Linef("Register this public key set with the client (Keycloak: Clients → the client → Credentials: Client Authenticator \"Signed JWT\", Keys → Use JWKS: paste it), then %s.", goAhead)
		line := make([]byte, 1)
		for {
			n, err := ios.In.Read(line)
			if err != nil {
				return fmt.Errorf("no go-ahead on stdin after the public key set (%w); nothing was stored", err)
			}
			if n == 1 && line[0] == '\n' {
				return nil
			}
		}
	}
}
