package keys

import (
	"context"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// What a command says of a key of this machine and of a team key comes
// from the service: the key's name, whom a change reached, and what a
// change did (a logout of a key logged out already, a removal with no
// session to end, a rename to T/NEW), so that the command holds no
// local-or-team branch.
func TestChangesSayWhatTheyDidLocalAndTeam(t *testing.T) {
	t.Parallel()
	ctx, ma, _, def := teamWithKey(t, "say")
	if _, _, err := ma.Store.Create(ctx, store.NewKey{Label: "mine", Definition: def, ClientSecret: "cs-say"}); err != nil {
		t.Fatal(err)
	}
	svc := New(Options{Store: ma.Store, Engine: func() (team.Engine, error) { return ma.Engine, nil }})

	for _, tc := range []struct {
		label, name, title, reach string
	}{
		{"mine", "API key mine", "API key mine", ""},
		{"say/k", "team key say/k", "Team key say/k", " for every member"},
	} {
		ref, err := svc.Lookup(tc.label)
		if err != nil {
			t.Fatal(err)
		}
		s := ref.Subject()
		if s.String() != tc.name || s.Title() != tc.title || s.Reach() != tc.reach {
			t.Errorf("%s: subject %q, %q, %q; want %q, %q, %q", tc.label, s.String(), s.Title(), s.Reach(), tc.name, tc.title, tc.reach)
		}
		// The first logout ends a session; the second finds none.
		for i, already := range []bool{false, true} {
			if ref, err = svc.Lookup(tc.label); err != nil {
				t.Fatal(err)
			}
			res, err := svc.EndSession(ctx, ref)
			if err != nil || res.Already != already || res.Subject != s || res.Dropped == "" || res.Next == "" {
				t.Errorf("%s: logout %d: %+v, %v; want already=%v with what was dropped and what next", tc.label, i+1, res, err, already)
			}
		}
	}
	if b := SecretsBackend(store.Key{Label: "say/k", Team: "say"}); b != "team" {
		t.Errorf("a team key's secrets are in %q, want team", b)
	}

	r, err := svc.RenameKey(ctx, "say/k", "say/k2")
	if err != nil || r.Label != "say/k2" || r.From.String() != "team key say/k" || r.From.Reach() != " for every member" {
		t.Errorf("rename of a team key: %+v, %v", r, err)
	}
	r, err = svc.RenameKey(ctx, "mine", "ours")
	if err != nil || r.Label != "ours" || r.From.String() != "API key mine" || r.From.Reach() != "" {
		t.Errorf("rename of a key of this machine: %+v, %v", r, err)
	}
	rm, err := svc.RemoveKey(ctx, "say/k2", RemoveOptions{Yes: true})
	if err != nil || rm.Done != "Removed team key say/k2 for every member" {
		t.Errorf("removal of a team key: %+v, %v", rm, err)
	}
	rm, err = svc.RemoveKey(ctx, "ours", RemoveOptions{Yes: true})
	if err != nil || rm.Done != "Removed API key ours (it had no session to end)" {
		t.Errorf("removal of a key of this machine logged out: %+v, %v", rm, err)
	}
}

// teamWithKey makes team name of two machines on a one-member etcd, with
// the client-credentials team key name/k (its client secret "cs-"+name),
// made by b; def is its definition.
func teamWithKey(t *testing.T, name string) (ctx context.Context, a, b etcdtest.Machine, def store.Definition) {
	t.Helper()
	c := etcdtest.Need(t, 1)
	srv := authtest.NewServer(authtest.Config{Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-" + name, ServiceAccount: true}}})
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	a, b = etcdtest.TeamOfTwo(t, ctx, c, name)
	def = store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Grant: auth.GrantClientCredentials}
	if _, err := b.Engine.CreateKey(ctx, name, team.NewKey{Label: "k", Definition: def, ClientSecret: "cs-" + name}); err != nil {
		t.Fatal(err)
	}
	return ctx, a, b, def
}
