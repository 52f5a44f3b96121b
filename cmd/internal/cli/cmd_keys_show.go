package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// keysShowOptions shows one key: its definition and its state.
type keysShowOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	Team  func() (team.Engine, error) // nil: no team engine linked
	Label string
	JSON  bool
}

func newCmdKeysShow(f *factory, runF func(*keysShowOptions) error) *cobra.Command {
	opts := &keysShowOptions{IO: f.IO, Now: f.Now, Store: f.readingStore, Team: f.engine()}
	cmd := &cobra.Command{
		Use:   "show [T/]LABEL",
		Short: "Show an API key's definition and state (no secret)",
		Long: `Show one API key: its definition (every setting of config.toml, under its
name there), where its secrets are kept, and the state of its tokens, as
status says it. A team key (TEAM/LABEL) is shown as cached on this machine.
No secret and no token is printed. --json prints one object: the fields of
keys list --json, and state, usable, detail, secrets and team.`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = args[0]
			if runF != nil {
				return runF(opts)
			}
			return keysShowRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON object")
	return cmd
}

// keyShowJSON is keys show --json: keys list --json's object and the state.
type keyShowJSON struct {
	keyJSON
	Team    string `json:"team,omitempty"`
	State   string `json:"state"`
	Usable  bool   `json:"usable"`
	Detail  string `json:"detail"`
	Secrets string `json:"secrets"`
}

func keysShowRun(opts *keysShowOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	now := opts.Now()
	svc := newKeys(st, opts.Team, opts.IO, nil, opts.Now, nil)
	return svc.Walk(context.Background(), opts.Label, keys.Cached, func(each keys.Each) error {
		return each(func(k store.Key) error {
			v := keyStatus(k, now)
			if opts.JSON {
				return writeJSON(opts.IO.Out, keyShowJSON{keyJSON: keyToJSON(k, now), Team: k.Team,
					State: v.State, Usable: v.Usable, Detail: v.Detail, Secrets: keys.SecretsBackend(k)})
			}
			return writeKeyShow(opts.IO.Out, k, v, now)
		})
	})
}

// writeKeyShow prints a key as "Name: value" lines, then its definition
// field by field under config.toml's names (a field added to
// store.Definition shows here with no change).
func writeKeyShow(w io.Writer, k store.Key, v keyVerdict, now time.Time) error {
	tw := text.NewWriter(w)
	row := func(name string, value any) { tw.Linef("%-14s %s", name+":", value) }
	kw := k.Words()
	label := kw.Label
	if k.Default {
		label = text.Concat(label, text.Trusted(" (default)"))
	}
	// rowIf prints a row only when value is set (a key's team, its API
	// key).
	rowIf := func(name string, value text.Clean) {
		if !value.IsEmpty() {
			row(name, value)
		}
	}
	row("Key", label)
	rowIf("Team", kw.Team)
	row("State", v.Detail)
	row("Secrets", secretsWhere(k))
	rowIf("API key", kw.Masked)
	row("Realm", kw.RealmName)
	row("Grant", k.Grant.String())
	if !k.LastUsed.IsZero() {
		row("Last used", when("", k.LastUsed, now, ""))
	}
	if !k.CreatedAt.IsZero() {
		row("Created", when("", k.CreatedAt, now, ""))
	}
	tw.Line(text.Trusted("Definition:"))
	b, err := json.Marshal(k.Definition)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		var s string
		if json.Unmarshal(value, &s) != nil {
			s = string(value) // numbers, booleans, lists as JSON
		}
		tw.Linef("  %-20s %s", fmt.Sprint(name)+":", s)
	}
	return nil
}
