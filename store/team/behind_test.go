package team_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store/team"
)

// TestMachineBehindARemovalFailsClosed: the freeze attack on a real etcd.
// Member a removes member r; three members idle since (each cached the
// key's token and pinned the roster before) run nothing meanwhile. r, which
// kept its etcd access, writes back the roster it was in, deletes the newer
// one from the history, and writes items it signs for the old roster: the
// key's definition and a token set of its choosing (idle 0), a definition
// whose token URL is its own (idle 1), the definition with the token set
// deleted so that a renewal is encrypted to it (idle 2). Each idle machine
// reads what the roster key held since it pinned, takes the removal, and
// hands out nothing r wrote, sends nothing to r's URL and encrypts nothing
// to r. (etcd here keeps every revision; when they are compacted away the
// machine refuses: cmd/shipkey/fleet's TestFrozenMachineRefusesCLI.)
func TestMachineBehindARemovalFailsClosed(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newServer(t)
	var stolen atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ATTACKER-CHOSEN-TOKEN","token_type":"Bearer","expires_in":600}`))
	}))
	defer evil.Close()
	ctx := context.Background()
	const name = "frozen"
	a, r := twoMachines(t, c, name) // r is "b" in the roster
	idle := make([]*machine, 3)
	for i := range idle {
		idle[i] = newMachine(t, teamTimeout)
		card, err := idle[i].eng.Join(ctx, team.JoinOptions{Conn: conn(c, name)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.eng.AddMember(ctx, name, card, fmt.Sprintf("idle%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	nk := newKey(srv, "ci")
	k, err := a.eng.CreateKey(ctx, name, nk)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range idle {
		if _, err := m.eng.Token(ctx, name, "ci", team.TokenOptions{}); err != nil {
			t.Fatalf("idle %d: %v", i, err)
		}
	}
	x := newAttacker(t, name, signingKey(t, r, name))
	before := x.roster().Version
	if _, err := a.eng.RemoveMember(ctx, name, "b"); err != nil {
		t.Fatal(err)
	}
	// The freeze: the old roster back, the newer one gone from the history.
	x.put("roster", x.get(fmt.Sprintf("rosters/%012d", before)))
	if _, err := x.cli.Delete(ctx, fmt.Sprintf("%srosters/%012d", team.Prefix(name), before+1)); err != nil {
		t.Fatal(err)
	}
	honest := team.Definition{ID: k.ID, Label: "ci", Definition: nk.Definition, ClientSecret: nk.ClientSecret, Password: nk.Password, CreatedAt: time.Now()}
	evilDef := honest
	evilDef.AuthURL = evil.URL
	rID := ageIdentity(t, r, name)
	noToken := func(i int, ts *auth.TokenSet) {
		t.Helper()
		if ts != nil && strings.Contains(ts.AccessToken, "ATTACKER") {
			t.Fatalf("idle %d handed out the removed member's token", i)
		}
	}

	// idle 0: the definition and a token set r signed for the old roster.
	x.forge("key", k.ID, honest)
	x.forge("token", k.ID, auth.TokenSet{AccessToken: "ATTACKER-CHOSEN-TOKEN", TokenType: "Bearer", ExpiresIn: 600, ObtainedAt: time.Now(), AccessExpiresAt: time.Now().Add(10 * time.Minute)})
	ts, _ := idle[0].eng.Token(ctx, name, "ci", team.TokenOptions{})
	noToken(0, ts)
	ms, err := idle[0].eng.Members(ctx, name)
	if err != nil || len(ms) != 4 || strings.Contains(fmt.Sprint(ms), "{b ") {
		t.Fatalf("idle 0 after the freeze lists %v, %v; want the 4 members after the removal", ms, err)
	}

	// idle 1: a definition whose token URL is r's, and a token set due.
	x.forge("key", k.ID, evilDef)
	x.forge("token", k.ID, auth.TokenSet{AccessToken: "ATTACKER-OLD", TokenType: "Bearer", ExpiresIn: 1, ObtainedAt: time.Now().Add(-time.Hour), AccessExpiresAt: time.Now().Add(-time.Hour + time.Second), RefreshToken: "r"})
	ts, _ = idle[1].eng.Token(ctx, name, "ci", team.TokenOptions{})
	noToken(1, ts)
	if n := stolen.Load(); n != 0 {
		t.Fatalf("idle 1 sent %d requests to the removed member's token URL", n)
	}

	// idle 2: the definition r signed, no token set: a renewal would be
	// encrypted to the old roster.
	x.forge("key", k.ID, honest)
	if _, err := x.cli.Delete(ctx, team.TokenKey(name, k.ID)); err != nil {
		t.Fatal(err)
	}
	ts, _ = idle[2].eng.Token(ctx, name, "ci", team.TokenOptions{})
	noToken(2, ts)
	if resp, err := x.cli.Get(ctx, team.TokenKey(name, k.ID)); err != nil {
		t.Fatal(err)
	} else if len(resp.Kvs) == 1 && decrypts(resp.Kvs[0].Value, rID) {
		t.Fatal("idle 2 encrypted a renewal to the removed member")
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the removed member's token URL saw %d requests", n)
	}
}

// ageIdentity is m's member identity of team name.
func ageIdentity(t *testing.T, m *machine, name string) *age.X25519Identity {
	t.Helper()
	sec, err := m.st.TeamSecrets(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := age.ParseX25519Identity(sec.Identity)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// decrypts reports whether id opens the stored item value.
func decrypts(value []byte, id age.Identity) bool {
	var it struct{ Data []byte }
	if json.Unmarshal(value, &it) != nil {
		return false
	}
	_, err := age.Decrypt(strings.NewReader(string(it.Data)), id)
	return err == nil
}
