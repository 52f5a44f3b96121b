package keys

import (
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Address is a key address as the service reads it: a label of this
// machine's store, or TEAM/LABEL for a team this machine joined.
type Address struct {
	// Label is the address as given (or as SHIPKEY_KEY gave it): LABEL or
	// T/LABEL; "" asks the store for SHIPKEY_KEY, the default or the only
	// key.
	Label string
	// Team and TeamLabel are set for a team key.
	Team, TeamLabel string
}

// IsTeam reports whether a names a team key.
func (a Address) IsTeam() bool { return a.Team != "" }

// Parse reads addr as a key address: TEAM/LABEL when TEAM is a team this
// machine joined, else a label of this machine. Nothing is looked up.
func (s *Service) Parse(addr string) Address {
	t, l, ok := team.SplitAddress(addr)
	if !ok {
		return Address{Label: addr}
	}
	if _, err := s.st.Team(t); err != nil {
		return Address{Label: addr}
	}
	return Address{Label: addr, Team: t, TeamLabel: l}
}

// Address is the key a command that takes an optional key means: label,
// else SHIPKEY_KEY when it names a team key (which the store's Resolve does
// not know), else "" (the store then resolves SHIPKEY_KEY, the default,
// the only key). It reads the process environment, as the store does.
func (s *Service) Address(label string) Address {
	if label != "" {
		return s.Parse(label)
	}
	if env := os.Getenv(store.EnvKey); env != "" {
		if a := s.Parse(env); a.IsTeam() {
			return a
		}
	}
	return Address{}
}

// resolveLocal is the store's Resolve with "did you mean" for a mistyped
// label.
func (s *Service) resolveLocal(label string) (store.Key, error) {
	k, err := s.st.Resolve(label)
	return k, s.Suggest(label, err)
}

// Suggest turns a "no key labelled X" error for label into one that names
// the closest labels, when there are any; other errors pass unchanged. The
// result still matches store.ErrNotFound.
func (s *Service) Suggest(label string, err error) error {
	if err == nil || label == "" || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	keys, kerr := s.st.Keys()
	if kerr != nil {
		return err
	}
	labels := make([]string, len(keys))
	for i, k := range keys {
		labels[i] = k.Label
	}
	near := CloseLabels(label, labels)
	if len(near) == 0 {
		return err
	}
	for i, l := range near {
		near[i] = text.ShellQuote(l)
	}
	return &notFoundError{
		msg: text.Cleanf("no key labelled %s; did you mean %s? (see: shipkey keys list)",
			strconv.Quote(label), orList(near)).String(),
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

// CloseLabels returns up to three labels that the mistyped label was
// probably meant to be, closest first: the one that differs only in case
// (alone), else labels it is a prefix of and labels within an edit distance
// of 2 (1 for labels of up to four characters), ignoring case.
func CloseLabels(typed string, labels []string) []string {
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

// TeamStoreKey shows a team key where the CLI and the app show keys: its
// label is "T/LABEL".
func TeamStoreKey(k team.Key) store.Key {
	return store.Key{ID: k.ID, Definition: store.Definition{Connection: k.Conn, Grant: k.Grant, Username: k.Username}, Label: k.Address(), CreatedAt: k.CreatedAt, Token: k.Token, Masked: k.Masked, HasRefreshToken: k.HasRefreshToken, Team: k.Team, TeamRemoved: k.Removed}
}
