package cli

import (
	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/store"
)

// keysSetOptions changes a setting of a key that is not about how it gets
// tokens.
type keysSetOptions struct {
	IO     *iostreams
	Store  func() (*store.Store, error)
	Label  string
	APIURL *string // --api-url ("" clears); nil: not given
}

func newCmdKeysSet(f *factory, runF func(*keysSetOptions) error) *cobra.Command {
	opts := &keysSetOptions{IO: f.IO, Store: f.Store}
	var apiURL string
	cmd := &cobra.Command{
		Use:   "set LABEL --api-url URL",
		Short: "Change an API key's settings (its API's base URL)",
		Long: `Change an API key's settings that are not about how it gets tokens.

--api-url URL is the base URL of the API the key's tokens are for: a path
given to shipkey api or shipkey curl (shipkey api prod /shipments) is
resolved against it. https (http only to loopback), no query; --api-url ""
removes it.`,
		Example:           `  shipkey keys set prod --api-url https://api.example.com/v1`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = args[0]
			if !cmd.Flags().Changed("api-url") {
				return usageErrorf("nothing to set: give --api-url URL (see: %s --help)", cmd.CommandPath())
			}
			opts.APIURL = &apiURL
			if runF != nil {
				return runF(opts)
			}
			return keysSetRun(opts)
		},
	}
	cmd.Flags().StringVar(&apiURL, "api-url", "", `base URL of the key's API ("" removes it)`)
	return cmd
}

func keysSetRun(opts *keysSetOptions) error {
	clean, err := store.CheckAPIURL(*opts.APIURL)
	if err != nil {
		return usageErrorf("--api-url %v", err)
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	if err := newKeys(st, nil, opts.IO, nil, nil, nil).SetAPIURL(opts.Label, clean); err != nil {
		return err
	}
	if clean == "" {
		opts.IO.ErrText().Linef("Removed the api_url of API key %s", opts.Label)
		return nil
	}
	opts.IO.ErrText().Linef("API key %s: api_url = %s", opts.Label, clean)
	return nil
}
