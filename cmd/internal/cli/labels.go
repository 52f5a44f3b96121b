package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/spf13/cobra"
)

// resolveKey is st.Resolve with "did you mean" for a mistyped label.
func resolveKey(st *store.Store, label string) (store.Key, error) {
	k, err := st.Resolve(label)
	return k, suggestLabel(st, label, err)
}

// suggestLabel turns a "no key labelled X" error for label into one that
// names the closest labels, when there are any; other errors pass unchanged.
// The result still matches store.ErrNotFound.
func suggestLabel(st *store.Store, label string, err error) error {
	if err == nil || label == "" || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	keys, kerr := st.Keys()
	if kerr != nil {
		return err
	}
	labels := make([]string, len(keys))
	for i, k := range keys {
		labels[i] = k.Label
	}
	near := closeLabels(label, labels)
	if len(near) == 0 {
		return err
	}
	for i, l := range near {
		near[i] = text.ShellQuote(l)
	}
	return &notFoundError{
		msg: fmt.Sprintf("no key labelled %s; did you mean %s? (see: shipkey keys list)",
			text.Safe(strconv.Quote(label)), orList(near)),
		err: err,
	}
}

// notFoundError is the store's not-found error with a better message.
type notFoundError struct {
	msg string
	err error
}

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return e.err }

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// closeLabels returns up to three labels that the mistyped label was
// probably meant to be, closest first: the one that differs only in case
// (alone), else labels it is a prefix of and labels within an edit distance
// of 2 (1 for labels of up to four characters), ignoring case.
func closeLabels(typed string, labels []string) []string {
	t := strings.ToLower(typed)
	maxDist := 2
	if len([]rune(t)) <= 4 {
		maxDist = 1
	}
	type cand struct {
		label string
		dist  int
	}
	var cands []cand
	for _, l := range labels {
		ll := strings.ToLower(l)
		switch d := editDistance(t, ll); {
		case ll == t:
			cands = append(cands, cand{l, 0})
		case strings.HasPrefix(ll, t):
			cands = append(cands, cand{l, 1})
		case d <= maxDist:
			cands = append(cands, cand{l, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].label < cands[j].label
	})
	var out []string
	for _, c := range cands {
		if len(out) == 3 || (len(out) > 0 && cands[0].dist == 0 && c.dist > 0) {
			break // a label that differs only in case is the one
		}
		out = append(out, c.label)
	}
	return out
}

// editDistance is the optimal-string-alignment distance between a and b, in
// runes: insertions, deletions, substitutions and swaps of two neighbours
// ("prdo" for "prod") count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

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
