package keys

import (
	"context"
	"errors"
	"fmt"
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
	// Subject names the key.
	Subject Subject
	// Key is a key of this machine as it was before (its token's expiry is
	// what the server may honour still); a team key's address only.
	Key store.Key
	// Already: the key was logged out already, with nothing pending: no
	// session was ended and nothing was dropped.
	Already bool
	// Dropped says what was dropped: "dropped its tokens here", "dropped
	// the team's tokens".
	Dropped string
	// Next is how the key gets tokens again: a login of a key of this
	// machine; a team key's next token on any member when its grant runs
	// unattended.
	Next string
}

// SessionKeptError: the server refused to end a team key's session, or
// could not be reached; nothing was changed (the team's tokens are kept and
// the session is alive). Err is the server's error.
type SessionKeptError struct {
	Subject Subject
	Err     error
}

func (e *SessionKeptError) Error() string {
	return fmt.Sprintf("%s: %s; the team's tokens are kept (the session is alive): run shipkey logout %s to try again: %v",
		e.Subject, EndFailure(e.Err), text.ShellQuote(e.Subject.Label), e.Err)
}

func (e *SessionKeptError) Unwrap() error { return e.Err }

// EndFailure says why ending a session at the server failed (err, from
// auth): it could not be reached, or it refused.
func EndFailure(err error) string {
	switch auth.KindOf(err) {
	case auth.KindNetwork, auth.KindTimeout, auth.KindTLS:
		return "the server could not be reached to end the session"
	}
	return "the server refused to end the session"
}

// EndSession ends the session of the key at ref at the server and drops
// its tokens: a team key's once for the whole team (its shared tokens
// deleted; a server that refuses or cannot be reached is a
// *SessionKeptError). A key of this machine's failures are the store's
// (store.Logout).
func (s *Service) EndSession(ctx context.Context, ref Ref) (EndResult, error) {
	out := EndResult{Subject: ref.Subject(), Key: ref.Key}
	if ref.IsTeam() {
		out.Dropped = "dropped the team's tokens"
		out.Next = "the next token on any member logs in again if its grant runs unattended; else: shipkey login " + text.ShellQuote(ref.Label)
		eng, err := s.Engine()
		if err != nil {
			return out, err
		}
		res, err := eng.Logout(ctx, ref.Team, ref.TeamLabel)
		s.gen.Add(1)
		out.End, out.Already = res.End, err == nil && !res.HadToken
		if err != nil && auth.KindOf(err) != auth.KindUnknown {
			err = &SessionKeptError{Subject: out.Subject, Err: err}
		}
		return out, err
	}
	out.Dropped = "dropped its tokens here"
	out.Next = "log in again with: shipkey login " + text.ShellQuote(ref.Label)
	res, err := s.st.Logout(ctx, ref.Label)
	out.End = res
	out.Already = err == nil && ref.Key.LoggedOut && ref.Key.EndPending.IsZero()
	return out, err
}

// Logout is EndSession as the app asks it.
func (s *Service) Logout(ctx context.Context, label string) (auth.EndResult, error) {
	a := s.Parse(label)
	res, err := s.EndSession(ctx, Ref{Address: a, Key: store.Key{Label: label, Team: a.Team}})
	if kept := (*SessionKeptError)(nil); errors.As(err, &kept) {
		err = kept.Err // the app says the server's words beside the key
	}
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

// Renamed is what RenameKey did.
type Renamed struct {
	// From names the key by its old address; Label is its new one.
	From  Subject
	Label string
}

// RenameKey renames a key; a team key's for every member, and its new
// label may repeat the team's prefix ("T/NEW" or "NEW").
func (s *Service) RenameKey(ctx context.Context, label, newLabel string) (Renamed, error) {
	a := s.Parse(label)
	out := Renamed{From: Subject{Label: label, Team: a.Team}, Label: newLabel}
	if a.IsTeam() {
		eng, err := s.Engine()
		if err != nil {
			return out, err
		}
		nl := strings.TrimPrefix(newLabel, a.Team+"/")
		err = eng.RenameKey(ctx, a.Team, a.TeamLabel, nl)
		s.gen.Add(1)
		out.Label = team.Address(a.Team, nl)
		return out, err
	}
	if err := s.st.Rename(label, newLabel); err != nil {
		return out, s.Suggest(label, err)
	}
	return out, nil
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
	// Subject names the key.
	Subject Subject
	// Kept: Confirm said no; nothing was done.
	Kept bool
	End  auth.EndResult
	// Done says what was done, in a sentence, when no session was ended at
	// the server ("Removed team key T/L for every member", "Removed API key
	// L (it had no session to end)"); "" when one was to be ended: End and
	// the error say how that went.
	Done string
}

// RemoveKey removes a key named exactly and its secrets, ending its session
// at the server first (store.RemoveWith); a team key for every member of
// its team, only with o.Yes.
func (s *Service) RemoveKey(ctx context.Context, label string, o RemoveOptions) (Removed, error) {
	ref, err := s.Lookup(label)
	if err != nil {
		return Removed{}, err
	}
	out := Removed{Key: ref.Key, Subject: ref.Subject()}
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
		if err == nil {
			out.Done = "Removed " + out.Subject.String() + out.Subject.Reach()
		}
		return out, err
	}
	if !o.Yes && o.Confirm != nil {
		ok, err := o.Confirm(ref.Key)
		if err != nil || !ok {
			out.Kept = true
			return out, err
		}
	}
	out.End, err = s.st.RemoveWith(ctx, ref.Key.Label, o.RemoveOptions)
	if err == nil && ref.Key.LoggedOut && ref.Key.EndPending.IsZero() {
		out.Done = "Removed " + out.Subject.String() + " (it had no session to end)"
	}
	return out, err
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
