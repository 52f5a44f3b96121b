package cli

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/tui"
)

// teamBackend is the app's backend when this machine has joined teams: the
// store's keys plus every team's keys ("T/LABEL") from the local caches,
// which a watch per team keeps in step with etcd. Its stamp changes with
// every team change, so the app's 1 s tick reloads the table. Team keys are
// shown and their cached tokens inspected; logging out and in, refreshing,
// renaming and removing one acts for the whole team, as the CLI's
// `logout`, `login`, `refresh`, `keys rename` and `keys rm` on T/LABEL do.
type teamBackend struct {
	*store.Store
	eng   team.Engine
	teams []store.TeamConn
	gen   atomic.Int64
}

var _ tui.Backend = (*teamBackend)(nil)

// newTeamBackend starts a watch per team (ended with ctx); nil when this
// machine has joined no team.
func newTeamBackend(ctx context.Context, st *store.Store, eng team.Engine) *teamBackend {
	teams, err := st.Teams()
	if err != nil || len(teams) == 0 {
		return nil
	}
	b := &teamBackend{Store: st, eng: eng, teams: teams}
	for _, t := range teams {
		go func() { _ = eng.Watch(ctx, t.Name, func() { b.gen.Add(1) }) }()
	}
	return b
}

// EachKey walks the store's keys, then every team's cached keys.
func (b *teamBackend) EachKey(fn func(store.Key) error) error {
	if err := b.Store.EachKey(fn); err != nil {
		return err
	}
	for _, t := range b.teams {
		tks, err := b.eng.CachedKeys(t.Name)
		if err != nil {
			continue
		}
		for _, k := range tks {
			if err := fn(teamStoreKey(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *teamBackend) Stamp() (store.Stamp, error) {
	s, err := b.Store.Stamp()
	return s + store.Stamp(";teams:"+strconv.FormatInt(b.gen.Load(), 10)), err
}

func (b *teamBackend) Resolve(label string) (store.Key, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		k, _, err := b.eng.CachedToken(t, l)
		if err != nil {
			return store.Key{}, err
		}
		return teamStoreKey(*k), nil
	}
	return b.Store.Resolve(label)
}

func (b *teamBackend) Current(label string) (*auth.TokenSet, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		k, tok, err := b.eng.CachedToken(t, l)
		if err != nil {
			return nil, err
		}
		if tok == "" {
			return nil, &store.LoginNeededError{Label: label, Why: "no token cached on this machine yet"}
		}
		ts := k.Token
		ts.AccessToken = tok
		return &ts, nil
	}
	return b.Store.Current(label)
}

func (b *teamBackend) MarkUsed(label string) error {
	if _, _, ok := teamKeyAddress(b.Store, label); ok {
		return nil
	}
	return b.Store.MarkUsed(label)
}

// Logout ends a team key's session for the whole team (shipkey logout T/L).
func (b *teamBackend) Logout(ctx context.Context, label string) (auth.EndResult, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		res, err := b.eng.Logout(ctx, t, l)
		b.gen.Add(1)
		return res.End, err
	}
	return b.Store.Logout(ctx, label)
}

// Login gets new tokens for a team key for the whole team (shipkey login
// T/L); a password given replaces the team's kept one.
func (b *teamBackend) Login(ctx context.Context, label string, opts store.LoginOptions) (store.Key, *auth.TokenSet, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		k, ts, err := b.eng.Login(ctx, t, l, team.LoginOptions{Password: opts.Password})
		b.gen.Add(1)
		if err != nil {
			return store.Key{}, nil, err
		}
		return teamStoreKey(k), ts, nil
	}
	return b.Store.Login(ctx, label, opts)
}

// Refresh renews a team key's shared token now, once for the whole team.
func (b *teamBackend) Refresh(ctx context.Context, label string) (store.Key, *auth.TokenSet, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		ts, err := b.eng.Token(ctx, t, l, team.TokenOptions{Force: true})
		b.gen.Add(1)
		if err != nil {
			return store.Key{}, nil, err
		}
		k, err := b.Resolve(label)
		return k, ts, err
	}
	return b.Store.Refresh(ctx, label)
}

// Rename renames a team key for every member; the new label may repeat the
// team's prefix ("T/NEW" or "NEW"), as in `keys rename`.
func (b *teamBackend) Rename(label, newLabel string) error {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		ctx, cancel := context.WithTimeout(context.Background(), team.DefaultTimeout)
		defer cancel()
		err := b.eng.RenameKey(ctx, t, l, strings.TrimPrefix(newLabel, t+"/"))
		b.gen.Add(1)
		return err
	}
	return b.Store.Rename(label, newLabel)
}

// Remove removes a team key for every member of its team (the app asked
// "for every member of T?" first).
func (b *teamBackend) Remove(ctx context.Context, label string) (auth.EndResult, error) {
	if t, l, ok := teamKeyAddress(b.Store, label); ok {
		err := b.eng.RemoveKey(ctx, t, l)
		b.gen.Add(1)
		return auth.EndResult{}, err
	}
	return b.Store.Remove(ctx, label)
}

// SetDefault refuses a team key: the default is one of this machine's keys.
func (b *teamBackend) SetDefault(label string) error {
	if t, _, ok := teamKeyAddress(b.Store, label); ok {
		return errors.New(teamDefaultRefusal(label, t))
	}
	return b.Store.SetDefault(label)
}
