package cli

import (
	"context"
	"errors"
	"fmt"

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
		w := ios.ErrOut
		switch {
		case p.UserCode != "":
			fmt.Fprintf(w, "To sign in, open %s and enter the code %s\n", text.Safe(p.VerificationURI), text.Safe(p.UserCode))
			if p.VerificationURIComplete != "" {
				fmt.Fprintf(w, "  or open %s\n", text.Safe(p.VerificationURIComplete))
			}
			fmt.Fprintf(w, "Waiting for the approval (the code expires at %s; ctrl+c to cancel)…\n", text.Stamp(p.ExpiresAt))
			if getenv("BROWSER") != "" {
				if err := browser.Open(p.OpenURL(), browser.Options{Getenv: getenv, EnvOnly: true}); err != nil {
					fmt.Fprintf(w, "shipkey: could not open the browser (%s); open the URL yourself\n", text.Safe(err.Error()))
				}
			}
		case p.AuthURL != "":
			fmt.Fprintf(w, "Sign in with your browser; if it does not open, visit:\n  %s\n", text.Safe(p.AuthURL))
			fmt.Fprintf(w, "Waiting for the browser to come back to %s (until %s; ctrl+c to cancel)…\n", text.Safe(p.RedirectURI), text.Stamp(p.ExpiresAt))
			if err := browser.Open(p.AuthURL, browser.Options{Getenv: getenv}); err != nil && !errors.Is(err, browser.ErrNoBrowser) {
				fmt.Fprintf(w, "shipkey: could not open the browser (%s); open the URL yourself\n", text.Safe(err.Error()))
			}
		}
	}
}

// interrupted turns the failure of a grant cancelled by ctrl+c into
// errInterrupted (exit 130); other errors pass unchanged.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%w: nothing was stored", errInterrupted)
	}
	return err
}
