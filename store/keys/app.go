package keys

import (
	"context"
	"strconv"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// What the app asks of the service besides the keys themselves: the store's
// own answers, and a stamp that changes with the teams too.

// Watch keeps the team keys the app shows in step with etcd: a watch per
// joined team until ctx ends, each change counted in Stamp. It does nothing
// on a machine that joined no team.
func (s *Service) Watch(ctx context.Context) {
	teams, err := s.st.Teams()
	if err != nil || len(teams) == 0 {
		return
	}
	eng, err := s.Engine()
	if err != nil {
		return
	}
	for _, t := range teams {
		go func() { _ = eng.Watch(ctx, t.Name, func() { s.gen.Add(1) }) }()
	}
}

// Stamp identifies the keys' content: the store's stamp, and on a machine
// that joined a team the count of team changes seen and made.
func (s *Service) Stamp() (store.Stamp, error) {
	st, err := s.st.Stamp()
	if teams, terr := s.st.Teams(); terr == nil && len(teams) > 0 {
		st += store.Stamp(";teams:" + strconv.FormatInt(s.gen.Load(), 10))
	}
	return st, err
}

// ChangesSince tells which keys changed since the stamp since
// (store.Store.ChangesSince); on a machine that joined a team, every key is
// to be read again: a team's keys change in etcd, which numbers no change
// here.
func (s *Service) ChangesSince(since store.Stamp) (store.Changes, error) {
	if teams, err := s.st.Teams(); err != nil || len(teams) > 0 {
		st, serr := s.Stamp()
		return store.Changes{Stamp: st, All: true}, serr
	}
	return s.st.ChangesSince(since)
}

// StampFiles are the files whose changes change Stamp, for a watcher; nil
// on a machine that joined a team (team changes arrive by Watch: poll
// Stamp).
func (s *Service) StampFiles() []string {
	if teams, err := s.st.Teams(); err != nil || len(teams) > 0 {
		return nil
	}
	return s.st.StampFiles()
}

// Create gets a new key of this machine (store.Store.Create).
func (s *Service) Create(ctx context.Context, nk store.NewKey) (store.Key, *auth.TokenSet, error) {
	k, ts, err := s.st.Create(ctx, nk)
	if err == nil {
		s.tokens(ts)
	}
	return k, ts, err
}

// Liveness asks the server whether it still accepts the key's access token.
func (s *Service) Liveness(ctx context.Context, label string) (auth.Liveness, error) {
	return s.st.Liveness(ctx, label)
}

// Connections lists the store's connections (the form's suggestions).
func (s *Service) Connections() []auth.Connection { return s.st.Connections() }

// Settings are the store's settings.
func (s *Service) Settings() store.Settings { return s.st.Settings() }

// Requests is the app's Request screen history (store.Store.Requests).
func (s *Service) Requests() *store.RequestHistory { return s.st.Requests() }
