package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/browser"
	"github.com/shipkey/shipkey/internal/text"
)

// newPrompter tells the person on stderr what an interactive grant needs
// and opens the browser: a device code's verification URI only with
// $BROWSER (the person may approve on another machine), an authorization
// URL with $BROWSER or the desktop's opener. The URL is always printed; a
// browser that does not open is said and never stops the grant.
func newPrompter(ios *iostreams, getenv func(string) string) auth.Prompter {
	return func(p auth.Prompt) {
		w := ios.ErrText()
		exited := func(err error) {
			w.Linef("shipkey: the browser exited with an error (%s); open the URL yourself", err)
		}
		switch {
		case p.UserCode != "":
			w.Linef("To sign in, open %s and enter the code %s", p.VerificationURI, p.UserCode)
			if p.VerificationURIComplete != "" {
				w.Linef("  or open %s", p.VerificationURIComplete)
			}
			w.Linef("Waiting for the approval (the code expires at %s; ctrl+c to cancel)…", text.Stamp(p.ExpiresAt))
			if getenv("BROWSER") != "" {
				// The plain verification URI: a browser's argv is readable by
				// every local user, and the complete one carries the code.
				if err := browser.Open(p.BrowserURL(), browser.Options{Getenv: getenv, EnvOnly: true, Exited: exited}); err != nil {
					w.Linef("shipkey: could not open the browser (%s); open the URL yourself", err)
				}
			}
		case p.AuthURL != "":
			// The browser gets the one-time loopback start URL, never the
			// authorization URL (state, PKCE challenge, nonce) on its argv.
			err := browser.Open(p.BrowserURL(), browser.Options{Getenv: getenv, Exited: exited})
			if noBrowser(err, getenv) {
				// A server or an SSH session: say so at once rather than
				// wait for a browser that cannot come.
				port := "PORT"
				if u, perr := url.Parse(p.RedirectURI); perr == nil && u.Port() != "" {
					port = u.Port()
				}
				w.Linef("No browser here ($BROWSER is unset and there is no desktop to open one on). Open this URL in a browser that can reach %s:\n  %s", p.RedirectURI, p.AuthURL)
				fix := ""
				if !p.PortFixed {
					fix = " (fix the port with --callback-port " + port + ")"
				}
				w.Linef("From another machine: ssh -L %s:127.0.0.1:%s to this one first%s, or use --grant device-code instead.", port, port, fix)
			} else {
				w.Linef("Sign in with your browser; if it does not open, visit:\n  %s", p.AuthURL)
			}
			w.Linef("Waiting for the browser to come back to %s (until %s; ctrl+c to cancel)…", p.RedirectURI, text.Stamp(p.ExpiresAt))
			if err != nil && !noBrowser(err, getenv) {
				w.Linef("shipkey: could not open the browser (%s); open the URL yourself", err)
			}
		}
	}
}

// noBrowser reports whether err of browser.Open means this machine has no
// browser at all: no $BROWSER and no desktop, or no opener (xdg-open)
// installed. A $BROWSER that fails to start is another error.
func noBrowser(err error, getenv func(string) string) bool {
	return errors.Is(err, browser.ErrNoBrowser) || (getenv("BROWSER") == "" && errors.Is(err, exec.ErrNotFound))
}

// interrupted turns the failure of a grant cancelled by ctrl+c into
// errInterrupted (exit 130); other errors pass unchanged.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%w: nothing was stored", errInterrupted)
	}
	return err
}
