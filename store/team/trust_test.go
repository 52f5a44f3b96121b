package team_test

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/store/team"
)

// TestPlainRemoteEndpoints: plain http is refused (unless --etcd-insecure)
// only to hosts that are not loopback.
func TestPlainRemoteEndpoints(t *testing.T) {
	t.Parallel()
	got := team.PlainRemote([]string{"http://127.0.0.1:2379", "http://[::1]:2379", "http://localhost:2379", "https://etcd.example:2379", "http://etcd.example:2379", "HTTP://10.0.0.5:2379"})
	if want := []string{"http://etcd.example:2379", "HTTP://10.0.0.5:2379"}; !slices.Equal(got, want) {
		t.Fatalf("PlainRemote = %q, want %q", got, want)
	}
}

// TestRosterChain: a machine takes a newer roster only along signatures of
// members of the one before, never an older one or another of its version.
func TestRosterChain(t *testing.T) {
	t.Parallel()
	key := func() (ed25519.PrivateKey, team.Member) {
		_, k, _ := ed25519.GenerateKey(nil)
		return k, team.Member{Name: "m", Recipient: "age1x", SigningKey: team.EncodeSigningKey(k.Public().(ed25519.PublicKey))}
	}
	ka, a := key()
	kb, b := key()
	kx, x := key()
	sign := func(r team.Roster, k ed25519.PrivateKey) []byte {
		d, err := team.SignRoster(r, k)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	v1 := sign(team.Roster{Team: "t", Version: 1, Members: []team.Member{a}}, ka)
	v2 := sign(team.Roster{Team: "t", Version: 2, Members: []team.Member{a, b}}, ka)
	v3 := sign(team.Roster{Team: "t", Version: 3, Members: []team.Member{b}}, kb)
	hist := map[int64][]byte{1: v1, 2: v2, 3: v3}
	h := func(v int64) []byte { return hist[v] }
	if _, err := team.Accept("t", nil, v3, h); err != nil {
		t.Fatalf("trust on first use along the chain: %v", err)
	}
	if _, err := team.Accept("t", v1, v3, h); err != nil {
		t.Fatalf("v1 pinned, v3 along the chain: %v", err)
	}
	for name, tc := range map[string]struct{ pin, cur []byte }{
		"rollback":          {v3, v2},
		"same version, new": {v2, sign(team.Roster{Team: "t", Version: 2, Members: []team.Member{a, x}}, ka)},
		"non-member signer": {v2, sign(team.Roster{Team: "t", Version: 3, Members: []team.Member{a, b, x}}, kx)},
		"removed signer":    {v3, sign(team.Roster{Team: "t", Version: 4, Members: []team.Member{a, b}}, ka)},
		"other team":        {v1, sign(team.Roster{Team: "u", Version: 2, Members: []team.Member{a}}, ka)},
	} {
		if _, err := team.Accept("t", tc.pin, tc.cur, h); !errors.Is(err, team.ErrForged) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	// An item moved to another id is refused; one a member signed for a
	// later roster says this machine is behind; one a non-member signed for
	// a later roster is refused.
	r2, _, _ := team.ParseRoster("t", v2)
	item := team.SignItem("t", "token", "id1", 2, 7, []byte("ct"), kb)
	if _, seq, err := team.OpenItem("t", "token", "id1", r2, item); err != nil || seq != 7 {
		t.Fatalf("an honest item: seq %d, %v", seq, err)
	}
	if _, _, err := team.OpenItem("t", "token", "id2", r2, item); !errors.Is(err, team.ErrForged) {
		t.Fatalf("an item moved to another id: %v", err)
	}
	var behind *team.BehindError
	if _, _, err := team.OpenItem("t", "token", "id1", r2, team.SignItem("t", "token", "id1", 3, 8, []byte("ct"), kb)); !errors.As(err, &behind) || behind.Version != 3 || errors.Is(err, team.ErrForged) {
		t.Fatalf("an item a member signed for a later roster: %v", err)
	}
	if _, _, err := team.OpenItem("t", "token", "id1", r2, team.SignItem("t", "token", "id1", 3, 8, []byte("ct"), kx)); !errors.Is(err, team.ErrForged) {
		t.Fatalf("an item a non-member signed for a later roster: %v", err)
	}
	// A record before sequence numbers (seq 0) verifies; the sequence
	// number is signed: changed or stripped, the signature fails.
	if _, seq, err := team.OpenItem("t", "token", "id1", r2, team.SignItem("t", "token", "id1", 2, 0, []byte("ct"), kb)); err != nil || seq != 0 {
		t.Fatalf("a record without a sequence number: seq %d, %v", seq, err)
	}
	for _, edit := range []string{`"seq":70`, `"seq":0`} {
		changed := []byte(strings.Replace(string(item), `"seq":7`, edit, 1))
		if _, _, err := team.OpenItem("t", "token", "id1", r2, changed); !errors.Is(err, team.ErrForged) {
			t.Fatalf("sequence number edited to %s: %v", edit, err)
		}
	}
}

// TestMemberCardNamesTheEtcdUser: the card `team join` prints carries the
// etcd user the machine connects as, so that `team remove` can name the
// user to revoke; a card without one (or from an older shipkey) still
// reads, and the advice then says the team does not know it.
func TestMemberCardNamesTheEtcdUser(t *testing.T) {
	t.Parallel()
	_, k, _ := ed25519.GenerateKey(nil)
	sk := team.EncodeSigningKey(k.Public().(ed25519.PublicKey))
	for _, tc := range []struct{ name, user, wantName, wantUser string }{
		{"laptop", "ci-bot", "laptop", "ci-bot"},
		{"", "ci-bot", "", "ci-bot"},
		{"laptop", "", "laptop", ""},
		{"lap top", "a:b", "", ""},
	} {
		card := team.MemberCard("age1x", sk, tc.name, tc.user)
		rc, gotKey, name, user, err := team.ParseMemberCard(card)
		if err != nil || rc != "age1x" || gotKey != sk || name != tc.wantName || user != tc.wantUser {
			t.Errorf("%q: %q %q %q %q %v", card, rc, gotKey, name, user, err)
		}
	}
	m := team.Member{Name: "laptop", EtcdUser: "ci-bot"}
	if got := team.RevokeAdvice(m, "ops"); !strings.Contains(got, "etcdctl user delete ci-bot") {
		t.Errorf("own user: %q", got)
	}
	if got := team.RevokeAdvice(m, "ci-bot"); !strings.Contains(got, "etcdctl user passwd ci-bot") {
		t.Errorf("shared user: %q", got)
	}
	if got := team.RevokeAdvice(team.Member{Name: "laptop"}, ""); !strings.Contains(got, "Revoke its etcd credentials") || !strings.Contains(got, "does not know") {
		t.Errorf("unknown user: %q", got)
	}
}
