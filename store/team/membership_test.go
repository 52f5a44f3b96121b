package team_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"filippo.io/age"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// TestMembershipChangesOfManyKeys: with 150 team keys (300 items, past
// etcd's default --max-txn-ops of 128 that one transaction hit at 64 keys,
// so the re-encryption takes several batches and a partial last one) a
// member is added and another removed; the added one reads every key, the
// removed one none written afterwards, and every key still hands out
// tokens. The size is about that shape (more items than one transaction
// holds), not the number: 300 keys took twice as long and checked nothing
// more.
func TestMembershipChangesOfManyKeys(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name, nKeys = "many", 150
	// The re-encryption of every item reads and writes through a cluster
	// that the other parallel tests (and -race, and a loaded CI machine)
	// keep busy: teamTimeout is generous.
	a, b := twoMachines(t, c, name)
	k, err := a.eng.CreateKey(ctx, name, newKey(srv, "real"))
	if err != nil {
		t.Fatal(err)
	}
	// The others, written as a member writes them (signed by a), 100 puts a
	// transaction (etcd's --max-txn-ops is 128) rather than a round trip each.
	w := newAttacker(t, name, signingKey(t, a, name))
	f, err := etcdtest.NewForger(ctx, w.cli, name, w.key)
	if err != nil {
		t.Fatal(err)
	}
	var puts []clientv3.Op
	for i := range nKeys - 1 {
		id := fmt.Sprintf("%016x", i+1)
		d := team.Definition{ID: id, Definition: store.Definition{Grant: auth.GrantPassword, Connection: newKey(srv, "").Connection, Username: "svc"}, Label: fmt.Sprintf("k%03d", i), Password: password, ClientSecret: clientSecret, CreatedAt: time.Now()}
		for kind, v := range map[string]any{"key": d, "token": auth.TokenSet{AccessToken: "tok" + id, ObtainedAt: time.Now(), ExpiresIn: 600, AccessExpiresAt: time.Now().Add(10 * time.Minute)}} {
			k, value, err := f.Item(kind, id, v)
			if err != nil {
				t.Fatal(err)
			}
			puts = append(puts, clientv3.OpPut(k, string(value)))
		}
	}
	for batch := range slices.Chunk(puts, 100) {
		if _, err := w.cli.Txn(ctx).Then(batch...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	cm := newMachine(t, teamTimeout)
	card, err := cm.eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.AddMember(ctx, name, card, "c"); err != nil {
		t.Fatalf("add with %d keys: %v", nKeys, err)
	}
	keys, err := cm.eng.Keys(ctx, name)
	if err != nil || len(keys) != nKeys {
		t.Fatalf("the added member reads %d keys, %v; want %d", len(keys), err, nKeys)
	}
	if _, err := a.eng.RemoveMember(ctx, name, "b"); err != nil {
		t.Fatalf("remove with %d keys: %v", nKeys, err)
	}
	if _, err := b.eng.Keys(ctx, name); !errors.Is(err, team.ErrNotMember) {
		t.Fatalf("the removed member: %v, want not a member", err)
	}
	ts, err := cm.eng.Token(ctx, name, "real", team.TokenOptions{Force: true})
	if err != nil || ts.AccessToken == "" {
		t.Fatalf("token after the changes: %v", err)
	}
	if got := w.get("keys/" + k.ID); bytes.Contains(got, []byte(signingKeyOf(t, b, name))) {
		t.Fatal("an item is still signed by the removed member")
	}
}

func signingKeyOf(t *testing.T, m *machine, name string) string {
	return team.EncodeSigningKey(signingKey(t, m, name).Public().(ed25519.PublicKey))
}

// TestUnsignedTeamUpgrade: a team made before signatures (an unsigned
// roster, items as bare age ciphertext) is refused with one line saying
// what to do; a member of it signs it with `team init`, becoming the only
// member of roster v1 with every item it can read re-encrypted and signed;
// another machine joins again and is added, and both use the key.
func TestUnsignedTeamUpgrade(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "legacy"
	freshTeam(t, c, name)
	a := newMachine(t, teamTimeout)
	// a records the connection and its identity (the roster is missing).
	if _, err := a.eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)}); !errors.Is(err, team.ErrNoTeam) {
		t.Fatalf("join before the team exists: %v", err)
	}
	sec, err := a.st.TeamSecrets(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := age.ParseX25519Identity(sec.Identity)
	if err != nil {
		t.Fatal(err)
	}
	old := newAttacker(t, name, nil)
	roster, _ := json.Marshal([]team.Member{{Name: "a", Recipient: id.Recipient().String(), AddedAt: time.Now()}})
	old.put("roster", roster)
	seal := func(v any) []byte {
		plain, _ := json.Marshal(v)
		var buf bytes.Buffer
		w, _ := age.Encrypt(&buf, id.Recipient())
		_, _ = w.Write(plain)
		_ = w.Close()
		return buf.Bytes()
	}
	d := team.Definition{ID: "00000000000000aa", Definition: store.Definition{Grant: auth.GrantPassword, Connection: newKey(srv, "").Connection, Username: "svc"}, Label: "ci", Password: password, ClientSecret: clientSecret, CreatedAt: time.Now()}
	old.put("keys/"+d.ID, seal(d))
	old.put("catalog", []byte(d.ID))

	if _, err := a.eng.Keys(ctx, name); !errors.Is(err, team.ErrUnsigned) {
		t.Fatalf("keys on an unsigned team: %v, want the unsigned refusal", err)
	}
	if _, err := a.eng.Init(ctx, team.JoinOptions{Conn: conn(c, name), Name: "a"}); err != nil {
		t.Fatalf("init signs the unsigned team: %v", err)
	}
	if _, err := a.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	b := newMachine(t, teamTimeout)
	card, err := b.eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.AddMember(ctx, name, card, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
}
