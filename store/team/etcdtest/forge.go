package etcdtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"filippo.io/age"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Forge writes v at team's item kind/id (kind "key" or "token") as whoever
// holds key would: encrypted to every member of the roster etcd holds (its
// recipients are public) and signed with key for the roster's version, with
// a sequence number above every record written before. With
// a non-member's key it is an attacker's write; with a member's, a member's.
func Forge(ctx context.Context, cli *clientv3.Client, teamName, kind, id string, v any, key ed25519.PrivateKey) error {
	f, err := NewForger(ctx, cli, teamName, key)
	if err != nil {
		return err
	}
	k, value, err := f.Item(kind, id, v)
	if err != nil {
		return err
	}
	_, err = cli.Put(ctx, k, string(value))
	return err
}

// Forger makes items as Forge writes them, for the roster etcd held when it
// was made, without writing them: a test that writes many puts them in a
// few transactions instead of a round trip each.
type Forger struct {
	team   string
	roster team.Roster
	seq    int64 // above every record written before the forger read the roster
	recips []age.Recipient
	key    ed25519.PrivateKey
}

// NewForger reads team's roster from etcd once.
func NewForger(ctx context.Context, cli *clientv3.Client, teamName string, key ed25519.PrivateKey) (*Forger, error) {
	resp, err := cli.Get(ctx, team.Prefix(teamName)+"roster")
	if err != nil || len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("forge: no roster: %v", err)
	}
	r, _, err := team.ParseRoster(teamName, resp.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	f := &Forger{team: teamName, roster: r, key: key, seq: resp.Header.Revision + 1}
	for _, m := range r.Members {
		rc, err := age.ParseX25519Recipient(m.Recipient)
		if err != nil {
			return nil, err
		}
		f.recips = append(f.recips, rc)
	}
	return f, nil
}

// Seq sets the sequence number the items are signed with (0: a record of
// a shipkey before sequence numbers).
func (f *Forger) Seq(seq int64) { f.seq = seq }

// Item is the etcd key and value of v forged at kind/id.
func (f *Forger) Item(kind, id string, v any) (string, []byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, f.recips...)
	if err != nil {
		return "", nil, err
	}
	_, _ = w.Write(plain)
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	dir := map[string]string{"key": "keys/", "token": "tokens/"}[kind]
	return team.Prefix(f.team) + dir + id, team.SignItem(f.team, kind, id, f.roster.Version, f.seq, buf.Bytes(), f.key), nil
}

// OnlyKeyID is the id of the one key teamName holds in etcd; an error when
// it holds none or more than one.
func OnlyKeyID(ctx context.Context, cli *clientv3.Client, teamName string) (string, error) {
	keys := team.Prefix(teamName) + "keys/"
	resp, err := cli.Get(ctx, keys, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) != 1 {
		return "", fmt.Errorf("team %s holds %d keys in etcd, want 1", teamName, len(resp.Kvs))
	}
	return strings.TrimPrefix(string(resp.Kvs[0].Key), keys), nil
}

// MemberSigningKey is the signing key of the member whose store (plaintext
// secrets) is dir/config and dir/state: a test's attacker that is a member.
func MemberSigningKey(dir, teamName string) (ed25519.PrivateKey, error) {
	st, err := store.Open(store.Options{ConfigDir: filepath.Join(dir, "config"), StateDir: filepath.Join(dir, "state"), Backend: store.BackendPlaintext, Warn: discard{}})
	if err != nil {
		return nil, err
	}
	sec, err := st.TeamSecrets(teamName)
	_ = st.Close()
	if err != nil {
		return nil, err
	}
	return team.SigningKey(sec.Identity)
}
