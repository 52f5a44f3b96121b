package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// Ref is a key address resolved for a command: a key of this machine, as
// the store holds it, or a team key, whose team engine is at hand.
type Ref struct {
	Address
	// Key is a key of this machine as the store holds it; for a team key
	// only its Label ("T/LABEL") and Team are set.
	Key store.Key
}

// Find resolves a command's optional key (Address: label, SHIPKEY_KEY, the
// default, the only key). A team key needs the team engine: ErrNoTeamEngine
// in a program without one, before anything is read or asked. A mistyped
// label of this machine gets "did you mean".
func (s *Service) Find(label string) (Ref, error) {
	return s.find(s.Address(label), s.resolveLocal)
}

// Lookup resolves a key named exactly (no SHIPKEY_KEY, no default): LABEL
// or T/LABEL, as keys rename, rm, default and set-secret take it.
func (s *Service) Lookup(label string) (Ref, error) {
	return s.find(s.Parse(label), func(l string) (store.Key, error) {
		k, err := s.st.Key(l)
		return k, s.Suggest(l, err)
	})
}

func (s *Service) find(a Address, local func(string) (store.Key, error)) (Ref, error) {
	if a.IsTeam() {
		if _, err := s.Engine(); err != nil {
			return Ref{}, err
		}
		return Ref{Address: a, Key: store.Key{Label: a.Label, Team: a.Team}}, nil
	}
	k, err := local(a.Label)
	if err != nil && a.Label == "" && errors.Is(err, store.ErrNoKeys) {
		return s.onlyTeamKey(err)
	}
	if err != nil {
		return Ref{}, err
	}
	a.Label = k.Label
	return Ref{Address: a, Key: k}, nil
}

// onlyTeamKey is the key of a command that named none on a machine with no
// key of its own (noLocal): the one team key when there is one (as the
// only local key would be), else one line that names the team keys there
// are, or the teams that have none.
func (s *Service) onlyTeamKey(noLocal error) (Ref, error) {
	teams, err := s.st.Teams()
	if err != nil || len(teams) == 0 {
		return Ref{}, noLocal
	}
	keys, err := s.TeamKeys(context.Background(), Cached)
	if err != nil {
		return Ref{}, err
	}
	switch len(keys) {
	case 0:
		names := make([]string, len(teams))
		for i, t := range teams {
			names[i] = t.Name
		}
		return Ref{}, text.Errorf("no API keys yet: this machine has none of its own, and its teams (%s) have none; get one: shipkey keys new (--team TEAM for the team)", strings.Join(names, ", "))
	case 1:
		a := s.Parse(keys[0].Label)
		return Ref{Address: a, Key: store.Key{Label: a.Label, Team: a.Team}}, nil
	}
	labels := make([]string, 0, 4)
	for _, k := range keys[:min(len(keys), 3)] {
		labels = append(labels, k.Shown().String())
	}
	more := ""
	if len(keys) > 3 {
		more = fmt.Sprintf(" and %d more", len(keys)-3)
	}
	return Ref{}, &UsageError{Msg: fmt.Sprintf("which API key? this machine has none of its own, and its teams have %d (%s%s): name one, as in shipkey token %s, or set %s", len(keys), strings.Join(labels, ", "), more, text.ShellQuote(keys[0].Label), store.EnvKey)}
}

// LocalKey resolves label to a key of this machine only (store.Resolve with
// "did you mean"): the keys serve hands out.
func (s *Service) LocalKey(label string) (store.Key, error) { return s.resolveLocal(label) }

// MachineKey resolves a command's optional key to a key of this machine; a
// team key is refused for what (a subject such as "shipkey api" or "the
// Request screen"): its token is handed to a command by shipkey exec.
func (s *Service) MachineKey(label, what string) (store.Key, error) {
	a := s.Address(label)
	if a.IsTeam() {
		return store.Key{}, usagef("%s takes a key of this machine; for a team key run: shipkey exec %s -- …", what, text.ShellQuote(a.Label))
	}
	return s.resolveLocal(a.Label)
}

// Resolve is the key label names as the app shows it: a team key from this
// machine's cache ("T/LABEL"), else the store's Resolve.
func (s *Service) Resolve(label string) (store.Key, error) {
	if a := s.Parse(label); a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return store.Key{}, err
		}
		k, _, err := eng.CachedToken(a.Team, a.TeamLabel)
		if err != nil {
			return store.Key{}, err
		}
		return TeamStoreKey(*k), nil
	}
	return s.st.Resolve(label)
}

// Current is the key's token as kept on this machine, with no round trip
// and no renewal: a team key's as cached here (the app's, inspect's).
func (s *Service) Current(label string) (*auth.TokenSet, error) {
	if a := s.Parse(label); a.IsTeam() {
		return s.teamCurrent(a)
	}
	return s.st.Current(label)
}

// Inspected is a key's token as inspect shows it.
type Inspected struct {
	// Key is the key of this machine; a team key's address only (Label,
	// Team).
	Key   store.Key
	Token *auth.TokenSet
	// Renewed: the access token had expired and was renewed first.
	Renewed bool
	// KeyJKT and KeyX5T are what a key of this machine binds its tokens
	// to: its DPoP key's thumbprint, its client certificate's (RFC 9449,
	// RFC 8705); "" when it binds none (and for a team key).
	KeyJKT, KeyX5T string
}

// TokenToInspect is the current token of the key label names (Address), as
// kept here, without a round trip: a team key's as cached on this machine.
// An expired access token of a key of this machine is renewed first, as
// Token does (the server would only say it no longer accepts it, which
// reads as a session that ended); when the renewal fails, the expired one
// is returned. A key with no token is an error wrapping
// store.ErrLoginNeeded.
func (s *Service) TokenToInspect(ctx context.Context, label string) (Inspected, error) {
	in := Inspected{Key: store.Key{Label: label}}
	var err error
	if a := s.Parse(label); a.IsTeam() {
		in.Key.Team = a.Team
		// The cache's failure names the command that fills it.
		in.Token, err = s.cachedTeamToken(a, func(err error) error {
			return text.Errorf("team key %s: %w (run: shipkey token %s)", a.Label, err, text.ShellQuote(a.Label))
		})
	} else if in.Key, err = s.resolveLocal(label); err == nil {
		in.Token, err = s.st.Current(in.Key.Label)
	}
	if err != nil {
		return in, err
	}
	if in.Token == nil || in.Token.AccessToken == "" {
		return in, text.Errorf("API key %s has no token: %w; run: shipkey login %s", in.Key.Label, store.ErrLoginNeeded, text.ShellQuote(in.Key.Label))
	}
	if in.Key.Team != "" {
		return in, nil
	}
	if !in.Token.Access().ValidFor(s.now(), 0) {
		if fresh, err := s.st.Token(ctx, in.Key.Label, store.TokenOptions{}); err == nil {
			in.Token, in.Renewed = fresh, true
		}
	}
	if in.Key.Connection.DPoP || in.Key.Connection.AuthMethod().Needs().Cert {
		in.KeyJKT, in.KeyX5T, err = s.st.Binding(in.Key.Label)
	}
	return in, err
}

// cachedTeamToken is a team key's token as cached on this machine: the
// key's token set with its access token ("" when none is cached yet);
// cacheErr words the cache's failure (the engine's passes as it is).
func (s *Service) cachedTeamToken(a Address, cacheErr func(error) error) (*auth.TokenSet, error) {
	eng, err := s.Engine()
	if err != nil {
		return nil, err
	}
	k, tok, err := eng.CachedToken(a.Team, a.TeamLabel)
	if err != nil {
		return nil, cacheErr(err)
	}
	ts := k.Token
	ts.AccessToken = tok
	s.handled(tok)
	return &ts, nil
}

// teamCurrent is Current for a team key: a missing token is a login needed.
func (s *Service) teamCurrent(a Address) (*auth.TokenSet, error) {
	ts, err := s.cachedTeamToken(a, func(err error) error { return err })
	if err == nil && ts.AccessToken == "" {
		return nil, &store.LoginNeededError{Label: a.Label, Why: "no token cached on this machine yet"}
	}
	return ts, err
}
