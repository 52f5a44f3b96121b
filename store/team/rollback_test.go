package team_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestRollbackOfSignedItemsRefused: someone with etcd write access puts
// records back as they were. A token set from before a renewal (revoked,
// not expired) is refused and not handed out: the machine renews. A key
// definition from before `keys set-secret` is refused: nothing is sent
// with the old secret. A record of a shipkey before sequence numbers is
// read once, and refused after a numbered one replaced it.
func TestRollbackOfSignedItemsRefused(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "rollback"
	a, b := twoMachines(t, c, name)
	k, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x := newAttacker(t, name, nil)
	oldToken := x.get("tokens/" + k.ID)
	renewed, err := a.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, m := range []*machine{a, b} {
		// Each meets it (the first one's renewal replaces it).
		x.put("tokens/"+k.ID, oldToken)
		m.log.Reset()
		ts, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if ts.AccessToken == old.AccessToken {
			t.Fatalf("member %d handed out the token set put back as it was before a renewal", i)
		}
		if !strings.Contains(m.log.String(), "a rollback") {
			t.Fatalf("member %d said no rollback: %q", i, m.log.String())
		}
	}
	if renewed.AccessToken == old.AccessToken {
		t.Fatal("the renewal gave the same token")
	}

	// The definition as it was before set-secret.
	oldDef := x.get("keys/" + k.ID)
	if err := a.eng.SetClientSecret(ctx, name, "ci", "rotated-secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Keys(ctx, name); err != nil {
		t.Fatal(err)
	}
	x.put("keys/"+k.ID, oldDef)
	requests := srv.Count("token")
	for i, m := range []*machine{a, b} {
		if ts, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true}); !errors.Is(err, team.ErrForged) || !strings.Contains(err.Error(), "a rollback") || ts != nil {
			t.Fatalf("member %d: token with the definition put back: %v, want refused as a rollback", i, err)
		}
	}
	if n := srv.Count("token") - requests; n != 0 {
		t.Fatalf("%d token requests with the definition put back (the old secret)", n)
	}

	// A key written by a shipkey before sequence numbers (signed by a
	// member, number 0) is read; once renewed, its old record is refused.
	f, err := etcdtest.NewForger(ctx, x.cli, name, signingKey(t, a, name))
	if err != nil {
		t.Fatal(err)
	}
	f.Seq(0)
	const legacy = "1e6ac71e6ac71e6a"
	d := team.Definition{ID: legacy, Label: "legacy", Definition: newKey(srv, "").Definition, ClientSecret: clientSecret, Password: password, CreatedAt: time.Now()}
	now := time.Now()
	for kind, v := range map[string]any{"key": d, "token": auth.TokenSet{AccessToken: "legacy-token", TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: now, AccessExpiresAt: now.Add(10 * time.Minute)}} {
		key, value, err := f.Item(kind, legacy, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := b.eng.Token(ctx, name, "legacy", team.TokenOptions{})
	if err != nil || ts.AccessToken != "legacy-token" {
		t.Fatalf("a record without a sequence number: %v", err)
	}
	legacyToken := x.get("tokens/" + legacy)
	if _, err := b.eng.Token(ctx, name, "legacy", team.TokenOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	x.put("tokens/"+legacy, legacyToken)
	if ts, err := b.eng.Token(ctx, name, "legacy", team.TokenOptions{}); err != nil || ts.AccessToken == "legacy-token" {
		t.Fatalf("the record without a number put back after a numbered one: %v, handed out %v", err, ts != nil && ts.AccessToken == "legacy-token")
	}
}

// TestUnsignedRosterOverAPinRefused: an unsigned roster (a JSON list, as
// shipkey wrote before signatures) written over the signed one is refused
// like any other garbage: every member says so in one line and keeps
// working with the roster it pinned.
func TestUnsignedRosterOverAPinRefused(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "unsigned-over"
	a, b := twoMachines(t, c, name)
	if _, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	x := newAttacker(t, name, nil)
	x.put("roster", []byte(`[{"name":"x","recipient":"age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq","added_at":"2026-01-01T00:00:00Z"}]`))
	for i, m := range []*machine{a, b} {
		m.log.Reset()
		if _, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
			t.Fatalf("member %d: token: %v", i, err)
		}
		if keys, err := m.eng.Keys(ctx, name); err != nil || len(keys) != 1 {
			t.Fatalf("member %d: keys %v, %v", i, keys, err)
		}
		if ms, err := m.eng.Members(ctx, name); err != nil || len(ms) != 2 {
			t.Fatalf("member %d: members %v, %v; want the 2 pinned", i, ms, err)
		}
		if !strings.Contains(m.log.String(), "refused the roster") || !strings.Contains(m.log.String(), "using the roster v2 this machine pinned") {
			t.Fatalf("member %d said: %q", i, m.log.String())
		}
	}
	if _, err := a.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
}
