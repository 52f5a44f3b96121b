package keys

import (
	"context"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Login gets new tokens for the key by its grant: a team key's for the
// whole team, under the team-wide lock (a password given replaces the
// team's kept one; opts' other fields are for a key of this machine). The
// key returned is a team key's as listed ("T/LABEL", Team set).
func (s *Service) Login(ctx context.Context, label string, opts store.LoginOptions) (store.Key, *auth.TokenSet, error) {
	if a := s.Parse(label); a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return store.Key{}, nil, err
		}
		k, ts, err := eng.Login(ctx, a.Team, a.TeamLabel, team.LoginOptions{Password: opts.Password})
		s.gen.Add(1)
		if err != nil {
			return store.Key{}, nil, err
		}
		s.tokens(ts)
		return TeamStoreKey(k), ts, nil
	}
	k, ts, err := s.st.Login(ctx, label, opts)
	if err == nil {
		s.tokens(ts)
	}
	return k, ts, err
}

// LoginPassword says whether a login of the key at ref takes a password
// from the person, given on stdin (stdin) or in the environment (env), and
// whose it is (the username a prompt names; "" for a team key). A password
// offered to a grant that takes none is a mistake to say, not to drop: a
// *UsageError. A key of this machine asks when it keeps no password or one
// is offered; a team key (which always keeps its password) only when one is
// offered, and it then replaces the team's.
func (s *Service) LoginPassword(ref Ref, stdin, env bool) (ask bool, username string, err error) {
	if ref.IsTeam() {
		if stdin {
			// The grant as cached here.
			eng, err := s.Engine()
			if err != nil {
				return false, "", err
			}
			keys, _ := eng.CachedKeys(ref.Team)
			for _, k := range keys {
				if k.Label == ref.TeamLabel && k.Grant.Or() != auth.GrantPassword {
					return false, "", usagef("--password-stdin is for the password grant; team key %s uses %s", ref.Label, k.Grant)
				}
			}
		}
		return stdin || env, "", nil
	}
	key := ref.Key
	if key.Grant.Or() != auth.GrantPassword {
		if stdin {
			return false, "", usagef("--password-stdin is for the password grant; key %s uses %s", key.Shown(), key.Grant)
		}
		return false, "", nil
	}
	return !key.RememberPassword || stdin || env, key.Username, nil
}

// EndResult is what ending a key's session did.
type EndResult struct {
	End auth.EndResult
	// HadToken is false when a team held no token set for the key (logged
	// out already): no session was ended. Always true for a key of this
	// machine (its own state says whether it was logged out).
	HadToken bool
}

// EndSession ends the key's session at the server and drops its tokens: a
// team key's once for the whole team (its shared tokens deleted).
func (s *Service) EndSession(ctx context.Context, label string) (EndResult, error) {
	if a := s.Parse(label); a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return EndResult{}, err
		}
		res, err := eng.Logout(ctx, a.Team, a.TeamLabel)
		s.gen.Add(1)
		return EndResult{End: res.End, HadToken: res.HadToken}, err
	}
	res, err := s.st.Logout(ctx, label)
	return EndResult{End: res, HadToken: true}, err
}

// Logout is EndSession as the app asks it.
func (s *Service) Logout(ctx context.Context, label string) (auth.EndResult, error) {
	res, err := s.EndSession(ctx, label)
	return res.End, err
}

// Refresh renews the key's token now: a team key's shared token once for
// the whole team.
func (s *Service) Refresh(ctx context.Context, label string) (store.Key, *auth.TokenSet, error) {
	if a := s.Parse(label); a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return store.Key{}, nil, err
		}
		ts, err := eng.Token(ctx, a.Team, a.TeamLabel, team.TokenOptions{Force: true})
		s.gen.Add(1)
		if err != nil {
			return store.Key{}, nil, err
		}
		s.tokens(ts)
		k, err := s.Resolve(label)
		return k, ts, err
	}
	return s.st.Refresh(ctx, label)
}

// RenameKey renames a key; a team key's for every member, and its new
// label may repeat the team's prefix ("T/NEW" or "NEW"). It returns the new
// address.
func (s *Service) RenameKey(ctx context.Context, label, newLabel string) (string, error) {
	if a := s.Parse(label); a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return "", err
		}
		nl := strings.TrimPrefix(newLabel, a.Team+"/")
		err = eng.RenameKey(ctx, a.Team, a.TeamLabel, nl)
		s.gen.Add(1)
		return team.Address(a.Team, nl), err
	}
	if err := s.st.Rename(label, newLabel); err != nil {
		return "", s.Suggest(label, err)
	}
	return newLabel, nil
}

// Rename is RenameKey as the app asks it (a team's etcd work bounded by
// team.DefaultTimeout).
func (s *Service) Rename(label, newLabel string) error {
	if !s.Parse(label).IsTeam() {
		return s.st.Rename(label, newLabel)
	}
	ctx, cancel := context.WithTimeout(context.Background(), team.DefaultTimeout)
	defer cancel()
	_, err := s.RenameKey(ctx, label, newLabel)
	return err
}

// RemoveOptions say how to remove a key.
type RemoveOptions struct {
	store.RemoveOptions
	// Yes: the person already agreed. A team key is removed for every
	// member of its team only then.
	Yes bool
	// Confirm, when set and not Yes, asks whether to remove key, a key of
	// this machine; false keeps it.
	Confirm func(key store.Key) (bool, error)
}

// Removed is what RemoveKey did.
type Removed struct {
	// Key is the key as it was (a team key: its address and team only).
	Key store.Key
	// Kept: Confirm said no; nothing was done.
	Kept bool
	End  auth.EndResult
}

// RemoveKey removes a key named exactly and its secrets, ending its session
// at the server first (store.RemoveWith); a team key for every member of
// its team, only with o.Yes.
func (s *Service) RemoveKey(ctx context.Context, label string, o RemoveOptions) (Removed, error) {
	ref, err := s.Lookup(label)
	if err != nil {
		return Removed{}, err
	}
	if ref.IsTeam() {
		if !o.Yes {
			return Removed{}, usagef("removing team key %s removes it for every member of %s; pass --yes", label, ref.Team)
		}
		eng, err := s.Engine()
		if err != nil {
			return Removed{}, err
		}
		err = eng.RemoveKey(ctx, ref.Team, ref.TeamLabel)
		s.gen.Add(1)
		return Removed{Key: ref.Key}, err
	}
	if !o.Yes && o.Confirm != nil {
		ok, err := o.Confirm(ref.Key)
		if err != nil || !ok {
			return Removed{Key: ref.Key, Kept: true}, err
		}
	}
	res, err := s.st.RemoveWith(ctx, ref.Key.Label, o.RemoveOptions)
	return Removed{Key: ref.Key, End: res}, err
}

// Remove is RemoveKey as the app asks it: it asked "for every member of
// T?" first.
func (s *Service) Remove(ctx context.Context, label string) (auth.EndResult, error) {
	if a := s.Parse(label); a.IsTeam() {
		r, err := s.RemoveKey(ctx, label, RemoveOptions{Yes: true})
		return r.End, err
	}
	return s.st.Remove(ctx, label)
}

// SetDefault makes a key of this machine the default; a team key is
// refused (its keys are shared).
func (s *Service) SetDefault(label string) error {
	if a := s.Parse(label); a.IsTeam() {
		return usagef("team key %s cannot be the default: the default is a key of this machine (team %s's keys are shared); name it instead, as in shipkey token %s", label, a.Team, text.ShellQuote(label))
	}
	return s.st.SetDefault(label)
}

// SetClientSecret replaces the key's client secret (rotated at the realm):
// a team key's for every member (encrypted and signed for the roster).
func (s *Service) SetClientSecret(ctx context.Context, ref Ref, secret string) error {
	s.handled(secret)
	if ref.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return err
		}
		return eng.SetClientSecret(ctx, ref.Team, ref.TeamLabel, secret)
	}
	return s.Suggest(ref.Label, s.st.SetClientSecret(ctx, ref.Label, secret))
}

// SetAPIURL sets (or with "" removes) the API base URL of a key of this
// machine; a team key's is not kept yet.
func (s *Service) SetAPIURL(label, apiURL string) error {
	if s.Parse(label).IsTeam() {
		return usagef("keys set changes a key of this machine; a team key's api_url is not kept yet (give shipkey api a full URL)")
	}
	return s.Suggest(label, s.st.SetAPIURL(label, apiURL))
}

// MarkUsed records a use of a key of this machine (a team key's uses are
// not counted).
func (s *Service) MarkUsed(label string) error {
	if s.Parse(label).IsTeam() {
		return nil
	}
	return s.st.MarkUsed(label)
}
