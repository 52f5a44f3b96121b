package keys

import (
	"context"
	"errors"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Each walks keys one at a time, as store.Store.EachKey does.
type Each = func(func(store.Key) error) error

// Listing says where a walk reads team keys from.
type Listing int

const (
	// Cached reads each team's keys from this machine's cache: no etcd
	// round trip (status, the app).
	Cached Listing = iota
	// Live reads them from etcd; a team whose etcd does not answer is
	// listed from the cache with a warning (keys list).
	Live
	// Checked reads them as Live does, and a team whose roster no longer
	// holds this machine lists its keys as removed (store.Key.TeamRemoved)
	// instead of failing (status: a key of a team this machine was removed
	// from hands out nothing, whatever its cached token says).
	Checked
)

// TeamKeys lists every joined team's keys as store keys ("T/LABEL"); none
// (and no engine asked for) on a machine that joined no team.
func (s *Service) TeamKeys(ctx context.Context, from Listing) ([]store.Key, error) {
	teams, err := s.st.Teams()
	if err != nil || len(teams) == 0 {
		return nil, err
	}
	eng, err := s.Engine()
	if err != nil {
		return nil, err
	}
	var out []store.Key
	for _, t := range teams {
		keys, err := s.listTeam(ctx, eng, t.Name, from)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			out = append(out, TeamStoreKey(k))
		}
	}
	return out, nil
}

func (s *Service) listTeam(ctx context.Context, eng team.Engine, name string, from Listing) ([]team.Key, error) {
	if from == Cached {
		return eng.CachedKeys(name)
	}
	keys, err := eng.Keys(ctx, name)
	switch {
	case err != nil && errors.Is(err, team.ErrUnavailable):
		text.NewWriter(s.warn).Linef("shipkey: warning: %s; listing its keys from the local cache", err.Error())
		err = nil
	case from == Checked && errors.Is(err, team.ErrNotMember):
		err = nil // listed as removed, from the cache
	}
	return keys, err
}

// Walk walks the keys label names: every key when label is "" (this
// machine's from its index, one at a time, then the teams'), else the one
// key (LABEL, with "did you mean"; or T/LABEL from the team listing). The
// team keys are listed before body runs, so that a program without the
// team engine fails before anything is written.
func (s *Service) Walk(ctx context.Context, label string, from Listing, body func(Each) error) error {
	teamKeys, err := s.TeamKeys(ctx, from)
	if err != nil {
		return err
	}
	if a := s.Parse(label); a.IsTeam() {
		var found []store.Key
		for _, k := range teamKeys {
			if k.Label == label {
				found = append(found, k)
			}
		}
		if len(found) == 0 {
			return text.Errorf("no team key %s on this machine (see: shipkey keys list): %w", label, store.ErrNotFound)
		}
		return body(EachOf(found))
	} else if label != "" {
		k, err := s.st.Key(label)
		if err != nil {
			return s.Suggest(label, err)
		}
		return body(EachOf([]store.Key{k}))
	}
	return s.st.WalkKeys(func(local Each) error { return body(Then(local, EachOf(teamKeys))) })
}

// EachKey walks this machine's keys, then every team's cached keys (a team
// whose cache cannot be read is passed over): the app's key list.
func (s *Service) EachKey(fn func(store.Key) error) error {
	if err := s.st.EachKey(fn); err != nil {
		return err
	}
	teams, err := s.st.Teams()
	if err != nil || len(teams) == 0 {
		return nil
	}
	eng, err := s.Engine()
	if err != nil {
		return err
	}
	for _, t := range teams {
		tks, err := eng.CachedKeys(t.Name)
		if err != nil {
			continue
		}
		for _, k := range tks {
			if err := fn(TeamStoreKey(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// EachOf walks keys as store.EachKey walks the index.
func EachOf(keys []store.Key) Each {
	return func(fn func(store.Key) error) error {
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	}
}

// Then walks a, then b.
func Then(a, b Each) Each {
	return func(fn func(store.Key) error) error {
		if err := a(fn); err != nil {
			return err
		}
		return b(fn)
	}
}
