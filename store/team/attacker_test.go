package team_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// attacker is someone with write access to the team's prefix in etcd (an
// etcd role, an administrator, a removed member that kept its credentials)
// and a signing key of its own.
type attacker struct {
	t    *testing.T
	cli  *clientv3.Client
	team string
	key  ed25519.PrivateKey
}

func newAttacker(t *testing.T, name string, key ed25519.PrivateKey) *attacker {
	t.Helper()
	cli, err := needCluster(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	if key == nil {
		_, key, _ = ed25519.GenerateKey(nil)
	}
	return &attacker{t: t, cli: cli, team: name, key: key}
}

func (a *attacker) get(key string) []byte {
	a.t.Helper()
	resp, err := a.cli.Get(context.Background(), "/shipkey/teams/"+a.team+"/"+key)
	if err != nil || len(resp.Kvs) == 0 {
		a.t.Fatalf("attacker get %s: %v", key, err)
	}
	return resp.Kvs[0].Value
}

func (a *attacker) put(key string, value []byte) {
	a.t.Helper()
	if _, err := a.cli.Put(context.Background(), "/shipkey/teams/"+a.team+"/"+key, string(value)); err != nil {
		a.t.Fatal(err)
	}
}

// roster is the current roster as stored (its signature unchecked).
func (a *attacker) roster() team.Roster {
	a.t.Helper()
	r, _, err := team.ParseRoster(a.team, a.get("roster"))
	if err != nil {
		a.t.Fatal(err)
	}
	return r
}

// forge writes v at kind/id signed with the attacker's key and returns
// what etcd then holds.
func (a *attacker) forge(kind, id string, v any) []byte {
	a.t.Helper()
	if err := etcdtest.Forge(context.Background(), a.cli, a.team, kind, id, v, a.key); err != nil {
		a.t.Fatal(err)
	}
	return a.get(map[string]string{"key": "keys/", "token": "tokens/"}[kind] + id)
}

// refusedOnce says whether m's warnings hold a refusal, then forgets them.
func refusedOnce(m *machine) bool {
	out := m.log.String()
	m.log.Reset()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "refused") && strings.Contains(line, "etcd holds data no member wrote") {
			return true
		}
	}
	return false
}

func signingKey(t *testing.T, m *machine, name string) ed25519.PrivateKey {
	t.Helper()
	sec, err := m.st.TeamSecrets(name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := team.SigningKey(sec.Identity)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAttackerWithEtcdWriteAccess: on a real 3-member etcd, someone who can
// write the team's prefix but is no member (or was removed) tries each way
// in: adding itself to the roster, rolling the roster back to an older
// signed one, writing a token set, writing key definitions that point at
// its own token endpoint, and re-adding itself after removal. Every member
// refuses each in one line, hands out no attacker token, sends nothing to
// the attacker's endpoint, and keeps working on the honest items.
func TestAttackerWithEtcdWriteAccess(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	var stolen atomic.Int64 // requests that reached the attacker's endpoint
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ATTACKER-CHOSEN-TOKEN","token_type":"Bearer","expires_in":600}`))
	}))
	defer evil.Close()
	ctx := context.Background()
	const name = "attacked"
	a, b := twoMachines(t, c, name)
	// r joins, is added, and is removed again; it keeps its identity.
	r := newMachine(t, teamTimeout)
	card, err := r.eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.AddMember(ctx, name, card, "r"); err != nil {
		t.Fatal(err)
	}
	k, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.RemoveMember(ctx, name, "r"); err != nil {
		t.Fatal(err)
	}
	members := []*machine{a, b}
	honest := func(step string) {
		t.Helper()
		for i, m := range members {
			ts, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{})
			if err != nil {
				t.Fatalf("%s: member %d: token: %v", step, i, err)
			}
			if strings.Contains(ts.AccessToken, "ATTACKER") {
				t.Fatalf("%s: member %d handed out the attacker's token", step, i)
			}
			if strings.Count(ts.AccessToken, ".") != 2 {
				t.Fatalf("%s: member %d handed out a token that is not the realm's JWT", step, i)
			}
		}
	}
	// everyoneRefuses: each member, reading the whole team, says one
	// refusal and still lists the honest key.
	everyoneRefuses := func(step string) {
		t.Helper()
		for i, m := range members {
			m.log.Reset()
			keys, err := m.eng.Keys(ctx, name)
			if err != nil {
				t.Fatalf("%s: member %d: keys: %v", step, i, err)
			}
			if len(keys) != 1 || keys[0].Label != "ci" {
				t.Fatalf("%s: member %d lists %v, want the honest key ci alone", step, i, keys)
			}
			if !refusedOnce(m) {
				t.Fatalf("%s: member %d said no refusal", step, i)
			}
		}
		honest(step)
	}
	honest("before")
	goodRoster := func() []byte {
		resp, _ := newAttacker(t, name, nil).cli.Get(ctx, "/shipkey/teams/"+name+"/roster")
		return resp.Kvs[0].Value
	}()

	x := newAttacker(t, name, nil)
	restore := func() { x.put("roster", goodRoster) }

	// 1. Adding itself to the roster (signed with its own key).
	forged := x.roster()
	forged.Version++
	forged.Members = append(forged.Members, team.Member{Name: "x", Recipient: "age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq", SigningKey: team.EncodeSigningKey(x.key.Public().(ed25519.PublicKey))})
	data, err := team.SignRoster(forged, x.key)
	if err != nil {
		t.Fatal(err)
	}
	x.put("roster", data)
	everyoneRefuses("attacker in the roster")
	// A renewal meanwhile is encrypted to the pinned members only.
	if _, err := a.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(x.get("tokens/"+k.ID), []byte("age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq")) {
		t.Fatal("renewal encrypted to the forged roster")
	}
	restore()

	// 2. Rolling the roster back to the founding one (signed, older).
	x.put("roster", x.get("rosters/000000000001"))
	everyoneRefuses("older roster")
	restore()

	// 3. A token set of its choosing.
	x.put("tokens/"+k.ID, x.forge("token", k.ID, auth.TokenSet{AccessToken: "ATTACKER-CHOSEN-TOKEN", TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: time.Now(), AccessExpiresAt: time.Now().Add(10 * time.Minute)}))
	everyoneRefuses("forged token set")

	// 4. Key definitions whose token URL is its own: a new key and the
	// honest key's replacement.
	evilDef := team.Definition{ID: "e0e0e0e0e0e0e0e0", Definition: store.Definition{Grant: auth.GrantPassword, Connection: auth.Connection{AuthURL: evil.URL, Realm: "r", ClientID: "c"}, Username: "svc"}, Label: "evil", Password: "pw", CreatedAt: time.Now()}
	x.put("keys/"+evilDef.ID, x.forge("key", evilDef.ID, evilDef))
	x.put("tokens/"+evilDef.ID, x.forge("token", evilDef.ID, auth.TokenSet{AccessToken: "ATTACKER-CHOSEN-TOKEN", ExpiresIn: 1, ObtainedAt: time.Now().Add(-time.Hour), RefreshToken: "r"}))
	everyoneRefuses("forged key definition")
	for i, m := range members {
		if _, err := m.eng.Token(ctx, name, "evil", team.TokenOptions{}); !errors.Is(err, team.ErrKeyNotFound) {
			t.Fatalf("member %d: token of the forged key: %v, want no such key", i, err)
		}
	}
	good := x.get("keys/" + k.ID)
	replaced := evilDef
	replaced.ID, replaced.Label = k.ID, "ci"
	x.put("keys/"+k.ID, x.forge("key", k.ID, replaced))
	for i, m := range members {
		m.log.Reset()
		if ts, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{Force: true}); !errors.Is(err, team.ErrForged) || ts != nil {
			t.Fatalf("member %d: token of a replaced definition: %v, want refused", i, err)
		}
	}
	x.put("keys/"+k.ID, good)
	honest("after the definition is put back")

	// 5. The removed member re-adds itself, signing with the key it had.
	rx := newAttacker(t, name, signingKey(t, r, name))
	back := rx.roster()
	back.Version++
	back.Members = append(back.Members, team.Member{Name: "r", Recipient: r.recipient(t, name), SigningKey: team.EncodeSigningKey(rx.key.Public().(ed25519.PublicKey))})
	data, err = team.SignRoster(back, rx.key)
	if err != nil {
		t.Fatal(err)
	}
	rx.put("roster", data)
	everyoneRefuses("removed member re-adding itself")

	if n := stolen.Load(); n != 0 {
		t.Fatalf("the attacker's token endpoint saw %d requests", n)
	}
}

func (m *machine) recipient(t *testing.T, name string) string {
	t.Helper()
	tc, err := m.st.Team(name)
	if err != nil {
		t.Fatal(err)
	}
	return tc.Recipient
}

// TestTokenSetWithControlBytesRefused: a token set holding ESC, OSC 52 and
// CR LF, even one signed by a member (a member's machine compromised, or a
// bug), passes no member's token checks: it is refused in one line, not
// cached, and never handed out (token, exec, header and the app all take
// their token from Engine.Token).
func TestTokenSetWithControlBytesRefused(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	ctx := context.Background()
	const name = "ctrlbytes"
	a, b := twoMachines(t, c, name)
	k, err := a.eng.CreateKey(ctx, name, newKey(srv, "ci"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
		t.Fatal(err)
	}
	const hostile = "tok\x1b]52;c;ZXZpbA==\x07\r\nX-Evil: 1"
	x := newAttacker(t, name, signingKey(t, a, name))
	for i, m := range []*machine{a, b} {
		// Each member meets it (the first one's renewal replaces it).
		x.put("tokens/"+k.ID, x.forge("token", k.ID, auth.TokenSet{AccessToken: hostile, TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: time.Now(), AccessExpiresAt: time.Now().Add(10 * time.Minute)}))
		m.log.Reset()
		ts, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if strings.ContainsAny(ts.AccessToken, "\x1b\r\n\x07") {
			t.Fatalf("member %d handed out the token with control bytes", i)
		}
		if !strings.Contains(m.log.String(), "refused the token set") {
			t.Fatalf("member %d said no refusal: %q", i, m.log.String())
		}
		_, cached, err := m.eng.CachedToken(name, "ci")
		if err != nil || strings.ContainsAny(cached, "\x1b\r\n\x07") {
			t.Fatalf("member %d cached %q, %v", i, cached, err)
		}
	}
}
