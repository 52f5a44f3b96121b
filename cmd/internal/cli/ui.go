package cli

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/tui"
)

// uiOptions is what the CLI hands the interactive app.
type uiOptions struct {
	Store   *store.Store
	Auth    *auth.Client
	Now     func() time.Time
	Prefill tui.Prefill
	Demo    bool
	// Diag, when set, is pointed at the app's status line while it runs, so
	// warnings and debug lines never tear its frame.
	Diag *switchWriter
	// Team, when set, adds the keys of the teams this machine joined, kept
	// live by a watch per team.
	Team team.Engine
	// APIClient builds the Request screen's HTTP client (the factory's, as
	// for shipkey api); Secrets are the debug log's secrets. APIURL is the
	// screen's URL for a key without one (the demo's API).
	APIClient apiClientBuilder
	Secrets   *secretSet
	APIURL    string
	// Locked: the app starts without unlocking the store's secrets (a store
	// with no key); the first new key unlocks them, asking a passphrase in
	// the app.
	Locked bool
}

// runTUI opens the full-screen app; the only place the CLI calls package tui
// (besides `keys list`, which draws the app's table columns, tui.KeyColumns).
func runTUI(ctx context.Context, o uiOptions) error {
	noCoreDump() // the app holds secrets and tokens while it is open
	// Each load of the key list walks every key (a row of each kept, the
	// rest garbage at once), as the listings do: the same lower heap goal.
	listingGC()
	opts := tui.Options{Store: o.Store, Auth: o.Auth, Now: o.Now, Prefill: o.Prefill, Demo: o.Demo,
		TraceFirstFrame: os.Getenv(tui.EnvTraceFirstFrame), APIURL: o.APIURL}
	if o.Store != nil {
		// The app's keys, tokens and Request screen client: the key
		// service, as for the CLI (team keys too, kept live by a watch per
		// team).
		svc := newAppKeys(o)
		opts.Backend = svc
		opts.Audit = svc.Audit()
		if o.APIClient != nil {
			opts.API = requestClient(svc)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		svc.Watch(ctx)
	}
	if o.Diag != nil {
		opts.Notices = &tui.Notices{}
		defer o.Diag.Set(opts.Notices)()
	}
	if o.Locked && o.Store != nil {
		// The first new key unlocks, a passphrase asked inside the app.
		opts.Unlock = o.Store
	}
	return tui.Run(ctx, opts)
}

// The app's Backend is the key service.
var _ tui.Backend = (*keys.Service)(nil)

// newAppKeys is the app's key service: the store's keys, and the teams'
// when the engine is at hand.
func newAppKeys(o uiOptions) *keys.Service {
	// What the app hands out goes to the app itself (the clipboard, the
	// screen, the Request screen's API).
	opts := keys.Options{Store: o.Store, Now: o.Now, Client: o.APIClient, Audit: auditTrail(o.Store), Receiver: audit.Self}
	if o.Team != nil {
		opts.Engine = func() (team.Engine, error) { return o.Team, nil }
	}
	if o.Secrets != nil {
		opts.Handled = o.Secrets.Add
	}
	return keys.New(opts)
}

// requestClient is the HTTP client of the app's Request screen for a key:
// shipkey api's (the key service's Client), for a key of this machine; with
// an audience, the token api --audience sends (exchanged with the key's).
func requestClient(svc *keys.Service) tui.APIClient {
	return func(to tui.APITokenFor, renewed func()) (*http.Client, error) {
		key, err := svc.MachineKey(to.Label, "the Request screen")
		if err != nil {
			return nil, err
		}
		return svc.Client(key, keys.ClientOptions{Exchange: auth.Exchange{Audience: to.Audience}, Renewed: renewed,
			HandOut: &keys.HandOut{What: audit.Header, Via: "app request"}})
	}
}

// demoPrefill fills the Get API Key form with the demo server's credentials.
func demoPrefill(authURL, realm, clientID, clientSecret, username, password string) tui.Prefill {
	return tui.Prefill{AuthURL: authURL, Realm: realm, ClientID: clientID, ClientSecret: clientSecret,
		Username: username, Password: password, Label: "demo"}
}
