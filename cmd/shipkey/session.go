package main

import (
	"context"
	"fmt"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/spf13/cobra"
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
}

func newCmdLogin(f *factory, runF func(context.Context, *loginOptions) error) *cobra.Command {
	opts := &loginOptions{IO: f.IO, Getenv: f.Getenv, Now: f.Now, Store: f.Store, Secrets: f.Secrets}
	cmd := &cobra.Command{
		Use:   "login [LABEL]",
		Short: "Log an API key in again (new tokens by the password grant)",
		Long: `Log an API key in again with the password grant.

The password comes from SHIPKEY_PASSWORD, --password-stdin (one line) or a
hidden prompt; when the key remembers its password and none is given, the
remembered one is used. Without LABEL: SHIPKEY_KEY, else the default key,
else the only key.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the password from stdin (one line)")
	return cmd
}

func loginRun(ctx context.Context, opts *loginOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	key, err := st.Resolve(opts.Label)
	if err != nil {
		return err
	}
	password := ""
	if !key.RememberPassword || opts.PasswordStdin || opts.Getenv(envPassword) != "" {
		password, err = readSecret(opts.IO, opts.Getenv, secretSource{
			What:      "password",
			Env:       envPassword,
			FromStdin: opts.PasswordStdin,
			Prompt:    "Password for " + text.Safe(key.Username) + ": ",
			Hint:      "set " + envPassword + " or pass --password-stdin",
		})
		if err != nil {
			return err
		}
		opts.Secrets.Add(password)
	}
	key, err = st.Login(ctx, key.Label, password)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "Logged in API key %s (%s)\n", text.Safe(key.Label), lifetimes(key, opts.Now()))
	return nil
}

// tokenOptions prints a key's access token or the header carrying it.
type tokenOptions struct {
	IO      *iostreams
	Store   func() (*store.Store, error)
	Secrets *secretSet
	Label   string
	Header  bool // print "Authorization: Bearer <token>"
}

func newCmdToken(f *factory, runF func(context.Context, *tokenOptions) error) *cobra.Command {
	opts := &tokenOptions{IO: f.IO, Store: f.Store, Secrets: f.Secrets}
	return &cobra.Command{
		Use:   "token [LABEL]",
		Short: "Print the key's access token, refreshed first if needed",
		Long: `Print the key's access token and a newline on stdout, refreshing it first
when it is about to expire. Made for scripts:

  curl -H "Authorization: Bearer $(shipkey token)" https://api.example.com/…

Without LABEL: SHIPKEY_KEY, else the default key, else the only key.
Exit code 3 means only a new login can help (shipkey login).`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return tokenRun(cmd.Context(), opts)
		},
	}
}

func newCmdHeader(f *factory, runF func(context.Context, *tokenOptions) error) *cobra.Command {
	opts := &tokenOptions{IO: f.IO, Store: f.Store, Secrets: f.Secrets, Header: true}
	return &cobra.Command{
		Use:   "header [LABEL]",
		Short: "Print \"Authorization: Bearer <token>\" for the key",
		Long: `Print the HTTP header that carries the key's access token:

  curl -H "$(shipkey header)" https://api.example.com/…

The token is refreshed first if needed, as with "shipkey token".`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return tokenRun(cmd.Context(), opts)
		},
	}
}

func tokenRun(ctx context.Context, opts *tokenOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	key, err := st.Resolve(opts.Label)
	if err != nil {
		return err
	}
	ts, err := st.Token(ctx, key.Label, store.TokenOptions{MarkUsed: true})
	if err != nil {
		return err
	}
	opts.Secrets.Add(ts.AccessToken, ts.RefreshToken, ts.IDToken)
	if opts.Header {
		_, err = fmt.Fprintln(opts.IO.Out, "Authorization: "+ts.Header())
	} else {
		_, err = fmt.Fprintln(opts.IO.Out, ts.AccessToken)
	}
	return err
}

// logoutOptions ends a key's session.
type logoutOptions struct {
	IO    *iostreams
	Store func() (*store.Store, error)
	Label string
}

func newCmdLogout(f *factory, runF func(context.Context, *logoutOptions) error) *cobra.Command {
	opts := &logoutOptions{IO: f.IO, Store: f.Store}
	return &cobra.Command{
		Use:   "logout [LABEL]",
		Short: "End the key's session at the server and drop its tokens (the key stays)",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
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
	key, err := st.Resolve(opts.Label)
	if err != nil {
		return err
	}
	label := text.Safe(key.Label)
	if _, err := st.Logout(ctx, key.Label); err != nil {
		if auth.KindOf(err) == auth.KindUnknown {
			return err
		}
		return fmt.Errorf("API key %s: tokens dropped here, but the server refused to end the session: %w", label, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "Logged out API key %s (log in again with: shipkey login %s)\n", label, label)
	return nil
}
