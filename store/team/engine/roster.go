package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"filippo.io/age"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// roster is the team's member set as accepted (signed, chained to this
// machine's pin), with the etcd revision every encrypted write compares.
type roster struct {
	team.Roster
	Rev  int64  // the roster key's mod revision
	At   int64  // the store revision it was read at (sealPlain's numbers)
	data []byte // as signed (the bytes pinned)
	me   string // this machine's recipient, for a change to see (changeRoster)
}

func (r roster) recipients() ([]age.Recipient, error) {
	out := make([]age.Recipient, 0, len(r.Members))
	for _, m := range r.Members {
		rc, err := age.ParseX25519Recipient(m.Recipient)
		if err != nil {
			return nil, text.Errorf("roster: member %s has a damaged recipient", m.Name)
		}
		out = append(out, rc)
	}
	return out, nil
}

// hasMe reports whether this machine (recipient and signing key) is in r.
func (h *handle) hasMe(r roster) bool {
	m, ok := r.MemberBySigningKey(h.signingKey())
	return ok && m.Recipient == h.id.Recipient().String()
}

// readRoster reads the roster and accepts it against the pin.
func (h *handle) readRoster(ctx context.Context) (roster, error) {
	cli, err := h.client()
	if err != nil {
		return roster{}, err
	}
	kvs, at, err := cli.Get(ctx, rosterKey(h.name()))
	if err != nil {
		return roster{}, h.etcdErr(err)
	}
	if kvs[0] == nil {
		return roster{}, &Error{Team: h.name(), Msg: "etcd holds no such team (shipkey team init " + h.name() + " --etcd …)", Kind: ErrNoTeam}
	}
	return h.accept(ctx, kvs[0].Value, kvs[0].Rev, at, h.historyFrom(ctx, cli), false)
}

// hostname is a member's default name.
func hostname() string {
	n, err := os.Hostname()
	if err != nil || n == "" || !text.IsClean(n) || strings.ContainsAny(n, ": ") {
		return ""
	}
	return n
}

// Init creates team opts.Conn.Name in etcd with this machine as its only
// member (roster v1, signed by itself and pinned here), and records the
// connection here. It fails when the team exists, except on a team made by
// a shipkey without signatures whose roster holds this machine: then Init
// signs it again with this machine as its only member (see upgrade).
func (e *Engine) Init(ctx context.Context, opts JoinOptions) (Member, error) {
	h, err := e.join(ctx, opts)
	if err != nil {
		return Member{}, err
	}
	defer h.close()
	me := h.me()
	me.Name, me.AddedAt, me.EtcdUser = opts.Name, e.opts.Now().UTC(), h.tc.User
	if me.Name == "" {
		me.Name = hostname()
	}
	if me.Name == "" {
		me.Name = "founder"
	}
	r := roster{Roster: team.Roster{Team: h.name(), Version: 1, Members: []Member{me}}}
	data, err := team.SignRoster(r.Roster, h.signer)
	if err != nil {
		return Member{}, err
	}
	cli, err := h.client()
	if err != nil {
		return Member{}, err
	}
	bctx, cancel := context.WithTimeout(ctx, 4*h.timeout)
	defer cancel()
	ok, rev, err := cli.Commit(bctx, []cond{revIs(rosterKey(h.name()), 0)},
		[]op{put(rosterKey(h.name()), string(data)), put(rosterHistoryKey(h.name(), 1), string(data))})
	if err != nil {
		return Member{}, h.etcdErr(err)
	}
	if !ok {
		kvs, _, err := cli.Get(bctx, rosterKey(h.name()))
		if err != nil {
			return Member{}, h.etcdErr(err)
		}
		if kvs[0] != nil && team.IsUnsignedRoster(kvs[0].Value) {
			return me, h.upgrade(bctx, cli, kvs[0], r, data)
		}
		return Member{}, &Error{Team: h.name(), Msg: "already exists in this etcd; use `shipkey team join " + h.name() + " --etcd …` and ask a member to add you"}
	}
	_, err = h.accept(bctx, data, rev, rev, nil, true)
	return me, err
}

// upgrade signs a team made by a shipkey without signatures: this machine,
// a member of the unsigned roster, becomes the only member of roster v1 and
// re-encrypts and signs every item it can read (it vouches for them: they
// were written when anyone with etcd access could write). Items it cannot
// read are deleted. The other members join again and are added.
func (h *handle) upgrade(ctx context.Context, cli team.Driver, old *team.KV, r roster, data []byte) error {
	ms, err := team.ParseUnsignedRoster(old.Value)
	if err != nil || !slices.ContainsFunc(ms, func(m Member) bool { return m.Recipient == h.id.Recipient().String() }) {
		return &Error{Team: h.name(), Msg: "its roster is unsigned and does not hold this machine: only one of its members can sign it (shipkey team init " + h.name() + " on that machine)"}
	}
	after, err := h.reseal(ctx, cli, old.Rev, r, 1, func(kind, id string, value []byte) ([]byte, error) {
		if kind == kindCatalog {
			return value, nil
		}
		return open(value, h.id)
	})
	if err != nil {
		return err
	}
	rev, err := h.commitRoster(ctx, cli, old.Rev, after, r, data)
	if err != nil {
		return err
	}
	_, err = h.accept(ctx, data, rev, rev, nil, true)
	return err
}

// Join records the team's connection and a fresh member identity here (one
// already kept is reused), reads the team's roster and pins it (trust on
// first use: the founding roster and every signed change since), and
// returns this machine's member card (team.MemberCard) for a member to add;
// nothing is readable until a member adds it.
func (e *Engine) Join(ctx context.Context, opts JoinOptions) (string, error) {
	_, known := e.opts.Store.Team(opts.Conn.Name)
	h, err := e.join(ctx, opts)
	if err != nil {
		return "", err
	}
	defer h.close()
	cli, err := h.client()
	if err != nil {
		return "", err
	}
	bctx, cancel := h.bound(ctx)
	kvs, at, err := cli.Get(bctx, rosterKey(h.name()))
	if err != nil {
		cancel()
		return "", h.etcdErr(err)
	}
	if kvs[0] == nil {
		cancel()
		return "", &Error{Team: h.name(), Msg: "etcd holds no such team (a member creates it: shipkey team init " + h.name() + " --etcd …)", Kind: ErrNoTeam}
	}
	r, verr := team.Accept(h.name(), h.pinned(), kvs[0].Value, h.historyFrom(bctx, cli))
	cancel()
	if opts.Confirm != nil && verr == nil {
		// A person may take their time: etcd's bound starts again after.
		if err := opts.Confirm(r.Members); err != nil {
			if known != nil {
				_ = e.forget(ctx, h.name())
			}
			return "", err
		}
	}
	bctx, cancel = h.bound(ctx)
	defer cancel()
	if _, err := h.accept(bctx, kvs[0].Value, kvs[0].Rev, at, h.historyFrom(bctx, cli), true); err != nil {
		return "", err
	}
	return team.MemberCard(h.id.Recipient().String(), h.signingKey(), hostname(), h.tc.User), nil
}

func (e *Engine) join(ctx context.Context, opts JoinOptions) (*handle, error) {
	tc := opts.Conn
	if !store.ValidTeamName(tc.Name) {
		return nil, text.Errorf("team name %q: use letters, digits, - and _ (at most 40)", text.Sanitize(tc.Name))
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

// Members lists the team's roster (accepted against this machine's pin).
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

// AddMember adds the member of card (team.MemberCard, as `team join`
// prints it; name, else the card's host name) and re-encrypts every item of
// the team to the new member set.
func (e *Engine) AddMember(ctx context.Context, teamName, card, name string) (Member, error) {
	recipient, signingKey, host, etcdUser, err := team.ParseMemberCard(card)
	if err != nil {
		return Member{}, err
	}
	if _, err := age.ParseX25519Recipient(recipient); err != nil {
		return Member{}, text.Errorf("%q is not an age recipient (age1…, as `shipkey team join` prints)", text.Sanitize(recipient))
	}
	if name == "" {
		name = text.Safe(host)
	}
	m := Member{Name: name, Recipient: recipient, SigningKey: signingKey, AddedAt: e.opts.Now().UTC(), EtcdUser: text.Safe(etcdUser)}
	if m.Name == "" {
		m.Name = recipient[:12] + "…"
	}
	err = e.changeRoster(ctx, teamName, func(r *roster) error {
		if r.HasRecipient(recipient) {
			return fmt.Errorf("team %s: %s is already a member", teamName, recipient)
		}
		if _, ok := r.MemberBySigningKey(signingKey); ok {
			return fmt.Errorf("team %s: that signing key is already a member's", teamName)
		}
		if slices.ContainsFunc(r.Members, func(x Member) bool { return x.Name == m.Name }) {
			return text.Errorf("team %s: the name %s is taken; choose another with --name", teamName, m.Name)
		}
		r.Members = append(r.Members, m)
		return nil
	})
	return m, err
}

// RemoveMember removes the member named by recipient or name and
// re-encrypts every item without it. The removed member saw every secret
// before: the caller must say so (rotate the client secrets). A member does
// not remove itself (it signs the re-encrypted items): it leaves, and
// another member removes it.
func (e *Engine) RemoveMember(ctx context.Context, teamName, who string) (Member, error) {
	var gone Member
	err := e.changeRoster(ctx, teamName, func(r *roster) error {
		i := slices.IndexFunc(r.Members, func(m Member) bool { return m.Recipient == who || m.Name == who })
		if i < 0 {
			return text.Errorf("team %s: no member %s (shipkey team members %s)", teamName, who, teamName)
		}
		gone = r.Members[i]
		if len(r.Members) == 1 {
			return text.Errorf("team %s: %s is the last member; a team needs one", teamName, who)
		}
		if gone.Recipient == r.me {
			return text.Errorf("team %s: %s is this machine; another member removes it (this machine can run shipkey team leave %s)", teamName, gone.Name, teamName)
		}
		r.Members = slices.Delete(r.Members, i, i+1)
		return nil
	})
	return gone, err
}

// batchItems is how many items one re-encryption commit writes: each also
// compares its revision and the roster's, within etcd's default
// --max-txn-ops of 128 (a driver's Commit takes at least 2×batchItems+1
// conditions and operations).
const batchItems = 100

// changeRoster applies change to the roster and re-encrypts every key,
// token and catalog entry to the result, in batches that each compare the
// roster's revision and every item's they write (every member of the old
// and the new roster reads every item at every moment: items are encrypted
// to the new set, signed by this member, which is in both). Then the new
// roster, signed by this member, is written only if no item changed since
// the batches (a renewal meanwhile encrypted to the old set); else it starts
// over.
func (e *Engine) changeRoster(ctx context.Context, teamName string, change func(*roster) error) error {
	h, err := e.open(teamName)
	if err != nil {
		return err
	}
	defer h.close()
	bctx, cancel := context.WithTimeout(ctx, 6*h.timeout)
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
		if !h.hasMe(r) {
			return h.notMember()
		}
		next := roster{Roster: team.Roster{Team: teamName, Version: r.Version + 1, Members: slices.Clone(r.Members)}, me: h.id.Recipient().String()}
		if err := change(&next); err != nil {
			return err
		}
		data, err := team.SignRoster(next.Roster, h.signer)
		if err != nil {
			return err
		}
		after, err := h.reseal(bctx, cli, r.Rev, next, r.Version, h.itemOpener(teamName, r))
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return err
		}
		rev, err := h.commitRoster(bctx, cli, r.Rev, after, next, data)
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = h.accept(bctx, data, rev, rev, h.historyFrom(bctx, cli), false)
		return err
	}
	return &Error{Team: teamName, Msg: "the team keeps changing; try again"}
}

// itemOpener opens an item of team signed under roster r: its plaintext,
// the catalog's id as is. A record put back as it was is not signed anew.
func (h *handle) itemOpener(teamName string, r roster) func(kind, id string, value []byte) ([]byte, error) {
	return func(kind, id string, value []byte) ([]byte, error) {
		ct, seq, err := team.OpenItem(teamName, kind, id, r.Roster, value)
		if err == nil && kind != kindCatalog {
			err = h.notRolledBack(kind, id, seq)
		}
		if err != nil || kind == kindCatalog {
			return ct, err
		}
		return open(ct, h.id)
	}
}

var errChanged = errors.New("changed meanwhile")

// commitRoster writes roster data (next) and its history entry if the
// roster is still at rosterRev and no key, token or catalog entry was
// written after revision after, and returns the revision it wrote at. The
// history entry of the roster it follows is written again as this machine
// accepted it: one deleted (to freeze machines that did not see it) is
// back for them to chain through.
func (h *handle) commitRoster(ctx context.Context, cli team.Driver, rosterRev, after int64, next roster, data []byte) (int64, error) {
	t := h.name()
	ops := []op{put(rosterKey(t), string(data)), put(rosterHistoryKey(t, next.Version), string(data))}
	if pin := h.pinned(); pin != nil {
		if r, _, err := team.ParseRoster(t, pin); err == nil && r.Version == next.Version-1 {
			ops = append(ops, put(rosterHistoryKey(t, r.Version), string(pin)))
		}
	}
	ok, rev, err := cli.Commit(ctx, []cond{
		revIs(rosterKey(t), rosterRev),
		{Kind: team.NotAfter, Key: keysPrefix(t), Prefix: true, Rev: after},
		{Kind: team.NotAfter, Key: tokensPrefix(t), Prefix: true, Rev: after},
		{Kind: team.NotAfter, Key: catalogKey(t), Rev: after},
	}, ops)
	if err != nil {
		return 0, h.etcdErr(err)
	}
	if !ok {
		return 0, errChanged
	}
	return rev, nil
}

// itemOf is the kind and id of the item team t keeps at key k: a key
// definition, a token or the catalog; false for anything else.
func itemOf(t, k string) (kind, id string, ok bool) {
	switch {
	case k == catalogKey(t):
		return kindCatalog, kindCatalog, true
	case strings.HasPrefix(k, keysPrefix(t)):
		return kindKey, idOf(k, keysPrefix(t)), true
	case strings.HasPrefix(k, tokensPrefix(t)):
		return kindToken, idOf(k, tokensPrefix(t)), true
	}
	return "", "", false
}

// reseal re-encrypts every key, token and catalog entry of the team to to's
// members, signed by this member at version signAt, batchItems at a time,
// each batch only while the roster is at rosterRev and each item at the
// revision read. openItem returns an item's plaintext (the catalog's id as
// is); an item it refuses is no member's: it is deleted, and said. It
// returns the revision after the last write.
func (h *handle) reseal(ctx context.Context, cli team.Driver, rosterRev int64, to roster, signAt int64, openItem func(kind, id string, value []byte) ([]byte, error)) (int64, error) {
	t := h.name()
	kvs, after, err := cli.List(ctx, prefix(t))
	if err != nil {
		return 0, h.etcdErr(err)
	}
	signed := roster{Roster: team.Roster{Team: t, Version: signAt, Members: to.Members}, At: after}
	var cmps []cond
	var ops []op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		all := append([]cond{revIs(rosterKey(t), rosterRev)}, cmps...)
		ok, rev, err := h.commit(ctx, cli, all, ops)
		if err != nil {
			return h.etcdErr(err)
		}
		if !ok {
			return errChanged
		}
		after, cmps, ops = rev, cmps[:0], ops[:0]
		return nil
	}
	for _, kv := range kvs {
		k := kv.Key
		kind, id, ok := itemOf(t, k)
		if !ok {
			continue // the roster, its history, locks
		}
		cmps = append(cmps, revIs(k, kv.Rev))
		plain, err := openItem(kind, id, kv.Value)
		switch {
		case errors.Is(err, errNotRecipient):
			return 0, h.notMember()
		case errors.Is(err, team.ErrBehind):
			return 0, h.behind(err.Error())
		case isRefused(err):
			h.warnRefused(h.refused(strings.TrimPrefix(k, prefix(t))+" (deleted)", err))
			ops = append(ops, del(k))
		case err != nil:
			return 0, &Error{Team: t, Msg: fmt.Sprintf("%s: %v", strings.TrimPrefix(k, prefix(t)), err)}
		case kind == kindCatalog:
			ops = append(ops, put(k, h.signCatalog(signed, string(plain))))
		default:
			v, err := h.sealPlain(signed, kind, id, plain)
			if err != nil {
				return 0, err
			}
			ops = append(ops, put(k, v))
		}
		if len(ops) == batchItems {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	return after, flush()
}

// Teams lists the teams this machine has joined.
func (e *Engine) Teams() ([]store.TeamConn, error) { return e.opts.Store.Teams() }

// Leave forgets team on this machine: its connection and member identity
// (store.DropTeam), then its state directory (cache, pinned roster, locks).
func (e *Engine) Leave(ctx context.Context, teamName string) error {
	h, err := e.open(teamName)
	if err != nil {
		return err
	}
	h.close()
	return e.forget(ctx, teamName)
}

// forget drops what this machine keeps of a team: its connection, member
// identity, cache and pinned roster.
func (e *Engine) forget(ctx context.Context, teamName string) error {
	if err := e.opts.Store.DropTeam(ctx, teamName); err != nil {
		return err
	}
	return os.RemoveAll(team.StateDir(e.opts.Store.StateDir(), teamName))
}
