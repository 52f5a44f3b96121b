package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/spf13/cobra"
)

// demoOptions runs the built-in demo realm.
type demoOptions struct {
	IO     *iostreams
	Now    func() time.Time
	Auth   func() (*auth.Client, error)
	Open   func(store.Options) (*store.Store, error) // the throwaway store
	RunTUI func(context.Context, uiOptions) error
	Diag   *switchWriter // warnings and debug lines; the app's status line while it runs
	Serve  bool
	Addr   string
	// APIClient and Secrets are the Request screen's (as shipkey api's).
	APIClient apiClientBuilder
	Secrets   *secretSet
}

func newCmdDemo(f *factory, runF func(context.Context, *demoOptions) error) *cobra.Command {
	opts := &demoOptions{IO: f.IO, Now: f.Now, Auth: f.Auth, Open: f.openStore, RunTUI: runTUI, Diag: f.Diag,
		APIClient: f.APIClient, Secrets: f.Secrets}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Try shipkey against a built-in demo server (nothing is kept)",
		Long: `Start a Keycloak-compatible demo server on 127.0.0.1 and open the app on a
throwaway store with the demo credentials filled in. Nothing is written to
your own configuration, and everything is removed at exit.

With --serve, only run the server: its auth URL, realm, client id, client
secret, username, password, public client id and the URL of a demo API that
checks the realm's tokens (api_url) are printed on stdout (one "key: value" a
line), and it runs until interrupted. The demo realm serves
every grant: the client has a service account (client credentials) and the
device grant, the public client signs in with a device code or the browser
(its pages take the demo username and password).

Key-less CI logins: the realm trusts an external issuer of its own, as a
realm trusts a CI system's. assertion_url mints a token of it for anyone who
asks (GET; ?ttl=30s for a short one, ?aud=… for another audience), and the
client ci_client_id takes that token both as its client authentication and
as a JWT bearer grant for the demo user:

  curl -s ASSERTION_URL > ci.jwt
  shipkey keys new --label ci --grant jwt-bearer --auth-url AUTH_URL \
    --client-id shipping-ci --client-auth client_assertion \
    --assertion-file ci.jwt --client-assertion-file ci.jwt`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Serve, "serve", false, "only run the demo server until interrupted")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "loopback address for the server (with --serve)")
	return cmd
}

func demoRun(ctx context.Context, opts *demoOptions) error {
	if !opts.Serve && !opts.IO.IsInteractive() {
		return usageErrorf("the demo app needs a terminal; for the server alone run: shipkey demo --serve")
	}
	addr := "127.0.0.1:0"
	if opts.Serve {
		addr = opts.Addr
	}
	srv, err := authtest.Start(addr, authtest.DemoConfig())
	if err != nil {
		return fmt.Errorf("demo server: %w", err)
	}
	defer srv.Close()
	// An API beside the realm that checks the demo tokens (shipkey api,
	// shipkey curl, the Request screen have something to call).
	api, err := authtest.StartResourceServer("127.0.0.1:0", authtest.ResourceConfig{
		Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret,
	})
	if err != nil {
		return fmt.Errorf("demo API: %w", err)
	}
	defer api.Close()

	if opts.Serve {
		// The realm's settings are data for a script (key: value lines it
		// parses), written as they are.
		fmt.Fprintf(opts.IO.Out, "auth_url: %s\nrealm: %s\nclient_id: %s\nclient_secret: %s\nusername: %s\npassword: %s\npublic_client_id: %s\ngrants: %s\napi_url: %s\nci_client_id: %s\nassertion_url: %s\n",
			srv.URL(), srv.Realm(), authtest.DemoClientID, authtest.DemoClientSecret, authtest.DemoUsername, authtest.DemoPassword,
			authtest.DemoPublicClientID, grantNames(), api.URL(), authtest.DemoCIClientID, srv.External().URL+"/token")
		opts.IO.ErrText().Line(text.Trusted("Demo server running; stop it with Ctrl-C."))
		<-ctx.Done()
		return nil
	}

	dir, err := os.MkdirTemp("", "shipkey-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client, err := opts.Auth()
	if err != nil {
		return err
	}
	var warn io.Writer = opts.IO.ErrOut
	if opts.Diag != nil {
		warn = opts.Diag
	}
	st, err := opts.Open(store.Options{
		ConfigDir: filepath.Join(dir, "config"),
		StateDir:  filepath.Join(dir, "state"),
		Backend:   "memory",
		Auth:      client,
		Now:       opts.Now,
		Warn:      warn,
	})
	if err != nil {
		return err
	}
	defer st.Close()
	opts.IO.ErrText().Linef("Demo API at %s (try: shipkey api %s/v1/shipments)", api.URL(), api.URL())
	opts.IO.ErrText().Linef("Demo server at %s (realm %s)\n  client id: %s  client secret: %s\n  username:  %s  password:      %s",
		srv.URL(), srv.Realm(), authtest.DemoClientID, authtest.DemoClientSecret, authtest.DemoUsername, authtest.DemoPassword)
	return opts.RunTUI(ctx, uiOptions{
		Store: st,
		Auth:  client,
		Now:   opts.Now,
		Prefill: demoPrefill(srv.URL(), srv.Realm(), authtest.DemoClientID, authtest.DemoClientSecret,
			authtest.DemoUsername, authtest.DemoPassword),
		Demo:      true,
		Diag:      opts.Diag,
		APIClient: opts.APIClient,
		Secrets:   opts.Secrets,
		APIURL:    api.URL(),
	})
}
