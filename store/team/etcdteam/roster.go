package etcdteam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"filippo.io/age"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// roster is the team's member list as read, with the revision every
// encrypted write compares.
type roster struct {
	Members []Member
	Rev     int64
}

func (r roster) recipients() ([]age.Recipient, error) {
	out := make([]age.Recipient, 0, len(r.Members))
	for _, m := range r.Members {
		rc, err := age.ParseX25519Recipient(m.Recipient)
		if err != nil {
			return nil, fmt.Errorf("roster: member %s has a damaged recipient", text.Safe(m.Name))
		}
		out = append(out, rc)
	}
	return out, nil
}

func (r roster) has(recipient string) bool {
	return slices.ContainsFunc(r.Members, func(m Member) bool { return m.Recipient == recipient })
}

func (h *handle) readRoster(ctx context.Context) (roster, error) {
	cli, err := h.client()
	if err != nil {
		return roster{}, err
	}
	resp, err := cli.Get(ctx, rosterKey(h.name()))
	if err != nil {
		return roster{}, h.etcdErr(err)
	}
	if len(resp.Kvs) == 0 {
		return roster{}, &Error{Team: h.name(), Msg: "etcd holds no such team (shipkey team init " + h.name() + " --etcd …)", Kind: ErrNoTeam}
	}
	var ms []Member
	if err := json.Unmarshal(resp.Kvs[0].Value, &ms); err != nil {
		return roster{}, &Error{Team: h.name(), Msg: "the roster in etcd is damaged"}
	}
	return roster{Members: ms, Rev: resp.Kvs[0].ModRevision}, nil
}

// Init creates team opts.Conn.Name in etcd with this machine as its only
// member, and records the connection here. It fails when the team exists.
func (e *Engine) Init(ctx context.Context, opts JoinOptions) (Member, error) {
	h, err := e.join(ctx, opts)
	if err != nil {
		return Member{}, err
	}
	defer h.close()
	me := Member{Name: opts.Name, Recipient: h.id.Recipient().String(), AddedAt: e.opts.Now().UTC()}
	if me.Name == "" {
		me.Name = "founder"
	}
	data, _ := json.Marshal([]Member{me})
	cli, err := h.client()
	if err != nil {
		return Member{}, err
	}
	bctx, cancel := h.bound(ctx)
	defer cancel()
	resp, err := cli.Txn(bctx).
		If(clientv3.Compare(clientv3.CreateRevision(rosterKey(h.name())), "=", 0)).
		Then(clientv3.OpPut(rosterKey(h.name()), string(data))).
		Commit()
	if err != nil {
		return Member{}, h.etcdErr(err)
	}
	if !resp.Succeeded {
		return Member{}, &Error{Team: h.name(), Msg: "already exists in this etcd; use `shipkey team join " + h.name() + " --etcd …` and ask a member to add you"}
	}
	return me, nil
}

// Join records the team's connection and a fresh member identity here (one
// already kept is reused) and returns this machine's recipient; nothing is
// readable until a member adds it.
func (e *Engine) Join(ctx context.Context, opts JoinOptions) (string, error) {
	h, err := e.join(ctx, opts)
	if err != nil {
		return "", err
	}
	defer h.close()
	return h.id.Recipient().String(), nil
}

func (e *Engine) join(ctx context.Context, opts JoinOptions) (*handle, error) {
	tc := opts.Conn
	if !store.ValidTeamName(tc.Name) {
		return nil, fmt.Errorf("team name %q: use letters, digits, - and _ (at most 40)", text.Safe(tc.Name))
	}
	if len(tc.Endpoints) == 0 {
		return nil, fmt.Errorf("team %s: --etcd URL[,URL…] is required", tc.Name)
	}
	st := e.opts.Store
	ident := ""
	if old, err := st.TeamSecrets(tc.Name); err == nil {
		ident = old.Identity
	}
	if ident == "" {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			return nil, err
		}
		ident = id.String()
	}
	id, err := age.ParseX25519Identity(ident)
	if err != nil {
		return nil, err
	}
	tc.Recipient = id.Recipient().String()
	if tc.JoinedAt.IsZero() {
		tc.JoinedAt = e.opts.Now().UTC()
	}
	if err := st.PutTeamSecrets(tc.Name, store.TeamSecrets{Identity: ident, EtcdPassword: opts.EtcdPassword}); err != nil {
		return nil, err
	}
	if err := st.PutTeam(ctx, tc); err != nil {
		return nil, err
	}
	return e.open(tc.Name)
}

// Members lists the team's roster.
func (e *Engine) Members(ctx context.Context, team string) ([]Member, error) {
	h, err := e.open(team)
	if err != nil {
		return nil, err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	r, err := h.readRoster(bctx)
	return r.Members, err
}

// AddMember adds recipient (named name) and re-encrypts every item of the
// team to the new member set.
func (e *Engine) AddMember(ctx context.Context, team, recipient, name string) (Member, error) {
	if _, err := age.ParseX25519Recipient(recipient); err != nil {
		return Member{}, fmt.Errorf("%q is not an age recipient (age1…, as `shipkey team join` prints)", text.Safe(recipient))
	}
	m := Member{Name: name, Recipient: recipient, AddedAt: e.opts.Now().UTC()}
	if m.Name == "" {
		m.Name = recipient[:12] + "…"
	}
	err := e.changeRoster(ctx, team, func(r *roster) error {
		if r.has(recipient) {
			return fmt.Errorf("team %s: %s is already a member", team, recipient)
		}
		if slices.ContainsFunc(r.Members, func(x Member) bool { return x.Name == name && name != "" }) {
			return fmt.Errorf("team %s: the name %s is taken; choose another with --name", team, text.Safe(name))
		}
		r.Members = append(r.Members, m)
		return nil
	})
	return m, err
}

// RemoveMember removes the member named by recipient or name and
// re-encrypts every item without it. The removed member saw every secret
// before: the caller must say so (rotate the client secrets).
func (e *Engine) RemoveMember(ctx context.Context, team, who string) (Member, error) {
	var gone Member
	err := e.changeRoster(ctx, team, func(r *roster) error {
		i := slices.IndexFunc(r.Members, func(m Member) bool { return m.Recipient == who || m.Name == who })
		if i < 0 {
			return fmt.Errorf("team %s: no member %s (shipkey team members %s)", team, text.Safe(who), team)
		}
		gone = r.Members[i]
		r.Members = slices.Delete(r.Members, i, i+1)
		if len(r.Members) == 0 {
			return fmt.Errorf("team %s: %s is the last member; a team needs one", team, text.Safe(who))
		}
		return nil
	})
	return gone, err
}

// changeRoster applies change to the roster and re-encrypts every key and
// token to the result, in one transaction that compares the revision of the
// roster and of every item it read; a concurrent write makes it start over.
func (e *Engine) changeRoster(ctx context.Context, team string, change func(*roster) error) error {
	h, err := e.open(team)
	if err != nil {
		return err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	cli, err := h.client()
	if err != nil {
		return err
	}
	for range 5 {
		r, err := h.readRoster(bctx)
		if err != nil {
			return err
		}
		if !r.has(h.id.Recipient().String()) {
			return h.notMember()
		}
		next := roster{Members: slices.Clone(r.Members)}
		if err := change(&next); err != nil {
			return err
		}
		recips, err := next.recipients()
		if err != nil {
			return err
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(rosterKey(team)), "=", r.Rev)}
		data, _ := json.Marshal(next.Members)
		ops := []clientv3.Op{clientv3.OpPut(rosterKey(team), string(data))}
		for _, pfx := range []string{keysPrefix(team), tokensPrefix(team)} {
			resp, err := cli.Get(bctx, pfx, clientv3.WithPrefix())
			if err != nil {
				return h.etcdErr(err)
			}
			for _, kv := range resp.Kvs {
				plain, err := open(kv.Value, h.id)
				if errors.Is(err, errNotRecipient) {
					return h.notMember()
				}
				if err != nil {
					return &Error{Team: team, Msg: fmt.Sprintf("%s: %v", strings.TrimPrefix(string(kv.Key), prefix(team)), err)}
				}
				ct, err := seal(plain, recips)
				if err != nil {
					return err
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
				ops = append(ops, clientv3.OpPut(string(kv.Key), string(ct)))
			}
		}
		resp, err := cli.Txn(bctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return h.etcdErr(err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return &Error{Team: team, Msg: "the team keeps changing; try again"}
}

// Teams lists the teams this machine has joined.
func (e *Engine) Teams() ([]store.TeamConn, error) { return e.opts.Store.Teams() }
