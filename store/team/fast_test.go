package team_test

import (
	"context"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store/team"
)

// TestCachedFastAgreesWithEtcd: the engine-less first step hands out the
// cached token only while etcd holds the team's token set at the revision
// cached (over etcd's JSON gateway): a renewal or a logout on another
// machine makes it hand the call on; a token that is not valid long enough
// too.
func TestCachedFastAgreesWithEtcd(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "fast"
	a, b := twoMachines(t, c, name)
	if _, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci")); err != nil {
		t.Fatal(err)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); ok {
		t.Fatal("a token handed out before this machine cached any")
	}
	ts, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now())
	if !ok || got.AccessToken != ts.AccessToken {
		t.Fatalf("the cached token etcd still holds was not handed out (ok %v)", ok)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", time.Hour, time.Now()); ok {
		t.Fatal("handed out a token not valid for --min-valid")
	}
	if _, err := a.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); ok {
		t.Fatal("handed out the cached token after another machine renewed it")
	}
	if _, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.Logout(ctx, name, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); ok {
		t.Fatal("handed out the cached token after a logout on another machine")
	}
}

// TestCachedFastSeesTheRosterMove: the fast read asks for the roster key's
// revision in the same request as the token set's: a roster written since
// this machine pinned it (here the same bytes written again, as a roster
// put back over a removal would be) sends the call to the engine, which
// looks at what the key held meanwhile; then the fast read serves again.
func TestCachedFastSeesTheRosterMove(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "fastroster"
	a, b := twoMachines(t, c, name)
	if _, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci")); err != nil {
		t.Fatal(err)
	}
	ts, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); !ok {
		t.Fatal("the cached token was not handed out")
	}
	x := newAttacker(t, name, nil)
	x.put("roster", x.get("roster"))
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); ok {
		t.Fatal("handed out the cached token after the roster key was written")
	}
	got, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{})
	if err != nil || got.AccessToken != ts.AccessToken {
		t.Fatalf("the engine after the roster was written again unchanged: %v", err)
	}
	if _, ok := team.CachedFast(ctx, b.st, name, "ci", 0, time.Now()); !ok {
		t.Fatal("the fast read does not serve again once the engine looked")
	}
}
