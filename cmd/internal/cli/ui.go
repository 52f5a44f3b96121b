package cli

import (
	"context"
	"os"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
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
}

// runTUI opens the full-screen app; the only place the CLI calls package tui
// (besides `keys list`, which draws the app's table columns, tui.KeyColumns).
func runTUI(ctx context.Context, o uiOptions) error {
	noCoreDump() // the app holds secrets and tokens while it is open
	opts := tui.Options{Store: o.Store, Auth: o.Auth, Now: o.Now, Prefill: o.Prefill, Demo: o.Demo,
		TraceFirstFrame: os.Getenv(tui.EnvTraceFirstFrame)}
	if o.Team != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if b := newTeamBackend(ctx, o.Store, o.Team); b != nil {
			opts.Backend = b
		}
	}
	if o.Diag != nil {
		opts.Notices = &tui.Notices{}
		defer o.Diag.Set(opts.Notices)()
	}
	return tui.Run(ctx, opts)
}

// demoPrefill fills the Get API Key form with the demo server's credentials.
func demoPrefill(authURL, realm, clientID, clientSecret, username, password string) tui.Prefill {
	return tui.Prefill{AuthURL: authURL, Realm: realm, ClientID: clientID, ClientSecret: clientSecret,
		Username: username, Password: password, Label: "demo"}
}
