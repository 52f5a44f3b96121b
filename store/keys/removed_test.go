package keys

import (
	"errors"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// A machine removed from a team learns it at the next look at etcd, not
// from its cache: the Checked walk (status) lists the team's keys as
// removed, though the token cached here is still valid, and a token asked
// for says the machine was removed, not that it is no member as if it had
// never been added.
func TestRemovedMachineIsToldSo(t *testing.T) {
	t.Parallel()
	ctx, ma, mb, _ := teamWithKey(t, "gone")
	svc := New(Options{Store: mb.Store, Engine: func() (team.Engine, error) { return mb.Engine, nil }})
	if _, err := svc.Token(ctx, "gone/k", TokenOptions{}); err != nil { // b uses the key: it is cached here
		t.Fatal(err)
	}
	if _, err := ma.Engine.RemoveMember(ctx, "gone", "b"); err != nil {
		t.Fatal(err)
	}
	listed := func(from Listing) (keys []store.Key, err error) {
		err = svc.Walk(ctx, "", from, func(each Each) error {
			return each(func(k store.Key) error { keys = append(keys, k); return nil })
		})
		return keys, err
	}
	if keys, err := listed(Cached); err != nil || len(keys) != 1 || keys[0].TeamRemoved {
		t.Fatalf("the cache alone cannot know yet: %+v, %v", keys, err)
	}
	keys, err := listed(Checked)
	if err != nil || len(keys) != 1 || keys[0].Label != "gone/k" || !keys[0].TeamRemoved {
		t.Fatalf("checked listing of a removed machine: %+v, %v; want gone/k removed", keys, err)
	}
	_, err = svc.Token(ctx, "gone/k", TokenOptions{})
	if !errors.Is(err, team.ErrNotMember) || !strings.Contains(err.Error(), "team gone: this machine was removed from the team") || strings.Contains(err.Error(), "team add gone age1") {
		t.Fatalf("token of a removed machine: %v; want it said removed", err)
	}
}
