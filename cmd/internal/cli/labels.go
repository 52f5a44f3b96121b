package cli

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/store"
)

// completeLabels completes the first maxArgs positional arguments with key
// labels. It opens the store without an auth client,
// a passphrase prompt or a warning writer and reads only its metadata
// (store.Keys): completion never prompts, never touches the secrets backend
// and never writes to the terminal.
func completeLabels(f *factory, maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return labelCompletions(f, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeExec completes exec's label, and nothing of shipkey's after "--"
// (there the shell completes the command). cobra's ArgsLenAtDash cannot tell
// during completion (it parses the flags twice, once with an added "--"), so
// the command line is read as given.
func completeExec(f *factory) cobra.CompletionFunc {
	labels := completeLabels(f, 1)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if n := len(f.Args); n > 0 && slices.Contains(f.Args[:n-1], "--") {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return labels(cmd, args, toComplete)
	}
}

// completeLabelFlag completes a flag's value with key labels.
func completeLabelFlag(f *factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return labelCompletions(f, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// labelCompletions lists the labels starting with prefix, each with its
// state as the description.
func labelCompletions(f *factory, prefix string) []cobra.Completion {
	st, err := f.openStore(store.Options{Now: f.Now, Warn: io.Discard})
	if err != nil {
		return nil
	}
	defer st.Close()
	keys, err := st.Keys()
	if err != nil {
		return nil
	}
	now := f.Now()
	var out []cobra.Completion
	for _, k := range keys {
		if !strings.HasPrefix(k.Label, prefix) {
			continue
		}
		desc := keyStatus(k, now).Word
		if k.Default {
			desc = "default, " + desc
		}
		out = append(out, cobra.CompletionWithDesc(k.Label, desc))
	}
	// Team keys: the team's prefix (from config.toml alone; the labels are
	// encrypted and completion never unlocks anything).
	if teams, err := st.Teams(); err == nil {
		for _, t := range teams {
			if p := t.Name + "/"; strings.HasPrefix(p, prefix) {
				out = append(out, cobra.CompletionWithDesc(p, "team "+t.Name))
			}
		}
	}
	return out
}
