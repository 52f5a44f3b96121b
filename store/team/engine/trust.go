package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/team"
)

// Item kinds, signed with each item (team.SignItem).
const (
	kindKey     = "key"
	kindToken   = "token"
	kindCatalog = "catalog"
)

func rosterHistoryKey(t string, v int64) string { return fmt.Sprintf("%srosters/%012d", prefix(t), v) }

// pinPath holds the roster this machine accepted last (the stored bytes):
// the trust anchor every later roster must chain to.
func (h *handle) pinPath() string { return filepath.Join(h.dir(), team.PinFileName) }

func (h *handle) pinned() []byte {
	b, err := os.ReadFile(h.pinPath())
	if err != nil {
		return nil
	}
	return b
}

// refused is the one line for data etcd holds that no member wrote.
func (h *handle) refused(what string, err error) error {
	return &Error{Team: h.name(), Msg: "refused " + what + ": " + text.Safe(err.Error()) + " (see docs/teams.md, Threat model: who can write to etcd)", Kind: team.ErrForged}
}

// warnRefused says that an item was refused and left aside.
func (h *handle) warnRefused(err error) {
	fmt.Fprintf(h.e.opts.Warn, "shipkey: warning: %s\n", err)
}

// behind is the one line of a machine that may be behind the team's
// roster: it hands out, renews and encrypts nothing.
func (h *handle) behind(why string) error {
	return &Error{Team: h.name(), Kind: team.ErrBehind, Msg: "this machine may be behind a change of members (a removed member rolling the team back): " + text.Safe(why) +
		"; it hands out, renews and encrypts nothing until the roster is restored (docs/teams.md, Threat model)"}
}

// updatePinState changes the pin state (team.PinState) under its lock.
func (h *handle) updatePinState(fn func(*team.PinState)) error {
	if err := os.MkdirAll(h.dir(), 0o700); err != nil {
		return err
	}
	unlock, err := h.lockFile(context.Background(), "pin.lock")
	if err != nil {
		return err
	}
	defer unlock()
	ps := team.ReadPinState(h.dir())
	fn(&ps)
	b, err := json.Marshal(ps)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(h.dir(), team.PinStateFileName), b)
}

// pin makes data (r, read at the roster key's mod revision rev; 0: not the
// key's value) the roster this machine trusts. The state is written
// first: a kill between the two files leaves a state for another roster,
// which knows no revision (team.PinnedRosterRev).
func (h *handle) pin(r team.Roster, data []byte, rev int64) (roster, error) {
	if err := h.updatePinState(func(ps *team.PinState) { ps.Roster, ps.RosterRev = team.RosterSum(data), rev }); err != nil {
		return roster{}, err
	}
	if !bytes.Equal(h.pinned(), data) {
		if err := writeAtomic(h.pinPath(), data); err != nil {
			return roster{}, err
		}
	}
	return roster{Roster: r, data: data}, nil
}

// accept checks the roster etcd holds (data, at mod revision rev, read at
// store revision at) against this machine's pin and moves the pin forward;
// history reads older versions when the roster moved by more than one.
// Without a pin, only Join (tofu) accepts: trust on first use of the
// founding roster. A roster refused is said in one line and the pinned one
// is used instead (with etcd's revision, so that writes still compare it):
// items are verified against, and encrypted to, the members this machine
// trusts, and a member's next roster change writes a signed roster over the
// refused one. When the roster key was written since this machine pinned
// it and holds no newer roster (one written back over a removal: the
// freeze attack), what it held in between is looked at (formerRosters);
// when that cannot be read, the machine may be behind and refuses
// (team.ErrBehind).
func (h *handle) accept(ctx context.Context, data []byte, rev, at int64, history func(int64) []byte, tofu bool) (roster, error) {
	r, err := h.acceptStrict(ctx, data, rev, history, tofu)
	r.Rev, r.At = rev, at
	return r, err
}

func (h *handle) acceptStrict(ctx context.Context, data []byte, rev int64, history func(int64) []byte, tofu bool) (roster, error) {
	pin := h.pinned()
	if pin == nil {
		return h.acceptUnpinned(data, rev, history, tofu)
	}
	base, _, err := team.ParseRoster(h.name(), pin)
	if err != nil {
		return roster{}, h.refused("the roster", fmt.Errorf("this machine's pinned roster is damaged (join again): %w", err))
	}
	p := pinnedRoster{base: base, data: pin, rev: team.PinnedRosterRev(h.dir())}
	cur, aerr := team.Accept(h.name(), pin, data, history)
	same := aerr == nil && bytes.Equal(pin, data)
	switch {
	case same && (rev == p.rev || p.rev == 0 || tofu):
		// The roster pinned, at the revision pinned; or a revision to
		// learn (pinned by a shipkey that kept none, or joined again).
		if rev != p.rev && rev != 0 {
			return h.pin(cur, data, rev)
		}
		return roster{Roster: cur, data: pin}, nil
	case p.rev == 0 || rev == 0 || tofu:
		// Nothing to compare the key's revision with.
		if aerr == nil {
			return h.pin(cur, data, rev)
		}
		return h.keepPinned(p, aerr), nil
	}
	return h.acceptWrittenSince(ctx, p, data, rev, history, cur, aerr)
}

// pinnedRoster is the roster this machine pinned: parsed, as signed, and
// the roster key's revision it was pinned at (0: none kept).
type pinnedRoster struct {
	base team.Roster
	data []byte
	rev  int64
}

// acceptUnpinned accepts data, the roster at revision rev, on a machine
// that pinned none: only on first use (tofu), and only a signed one.
func (h *handle) acceptUnpinned(data []byte, rev int64, history func(int64) []byte, tofu bool) (roster, error) {
	if team.IsUnsignedRoster(data) {
		return roster{}, &Error{Team: h.name(), Kind: team.ErrUnsigned,
			Msg: "its roster is unsigned (made by an older shipkey): its founder signs it with `shipkey team init " + h.name() + " --etcd …`, then the others join again"}
	}
	if !tofu {
		return roster{}, &Error{Team: h.name(), Kind: team.ErrUnsigned,
			Msg: "this machine has pinned no roster of the team (joined with an older shipkey): run `shipkey team join " + h.name() + " --etcd …` again and compare the fingerprints"}
	}
	r, err := team.Accept(h.name(), nil, data, history)
	if err != nil {
		return roster{}, h.refused("the roster", err)
	}
	return h.pin(r, data, rev)
}

// keepPinned says why the roster read was refused (why) and keeps the one
// pinned.
func (h *handle) keepPinned(p pinnedRoster, why error) roster {
	h.warnRefused(fmt.Errorf("%w; using the roster v%d this machine pinned", h.refused("the roster", why), p.base.Version))
	return roster{Roster: p.base, data: p.data}
}

// acceptWrittenSince accepts data, read at revision rev, when the roster key
// was written since this machine pinned p: every value it held since,
// oldest first, then the one read now. The first roster of each version
// along the chain is the team's (another of the same version, an older one,
// one no member of the one before signed is not). cur and aerr are what
// accepting data after p gave.
func (h *handle) acceptWrittenSince(ctx context.Context, p pinnedRoster, data []byte, rev int64, history func(int64) []byte, cur team.Roster, aerr error) (roster, error) {
	formers, complete, err := h.formerRosters(ctx, rev, p.rev)
	if err != nil {
		return roster{}, err
	}
	best, bestData, bestRev := p.base, p.data, p.rev
	for _, kv := range append(formers, team.KV{Value: data, Rev: rev}) {
		r, err := team.Accept(h.name(), bestData, kv.Value, history)
		if err == nil && r.Version > best.Version {
			best, bestData, bestRev = r, kv.Value, kv.Rev
		}
	}
	switch {
	case best.Version > p.base.Version:
		if bytes.Equal(bestData, data) {
			return h.pin(best, data, rev)
		}
		if _, why := team.Accept(h.name(), bestData, data, history); why != nil {
			h.warnRefused(fmt.Errorf("%w; using the roster v%d it replaced", h.refused("the roster", why), best.Version))
		}
		return h.pin(best, bestData, bestRev)
	case !complete:
		return roster{}, h.behind(fmt.Sprintf("etcd's roster was written again since this machine pinned v%d and what it held in between can no longer be read (compacted)", p.base.Version))
	case aerr == nil && bytes.Equal(p.data, data):
		return h.pin(cur, data, rev) // written again unchanged: nothing newer was ever there
	}
	return h.keepPinned(p, aerr), nil
}

// lookBack bounds formerRosters: the roster key's writes since a machine
// last read it (each change of members is one).
const lookBack = 64

// formerRosters reads what the roster key held before revision rev, back
// to the value it held at revision until (the one pinned), oldest first;
// complete says it got there. It is not when the driver keeps no earlier
// values, when they were compacted away, or after lookBack writes.
func (h *handle) formerRosters(ctx context.Context, rev, until int64) ([]team.KV, bool, error) {
	cli, err := h.client()
	if err != nil {
		return nil, false, err
	}
	fr, ok := cli.(team.FormerReader)
	if !ok {
		return nil, false, nil
	}
	var out []team.KV
	for at := rev; len(out) < lookBack; {
		kv, err := fr.GetAt(ctx, rosterKey(h.name()), at-1)
		if errors.Is(err, team.ErrCompacted) || (err == nil && (kv == nil || kv.Rev < until)) {
			break
		}
		if err != nil {
			return nil, false, h.etcdErr(err)
		}
		if kv.Rev == until {
			slices.Reverse(out)
			return out, true, nil
		}
		out = append(out, *kv)
		at = kv.Rev
	}
	slices.Reverse(out)
	return out, false, nil
}

// catchUp takes the roster of version v, which a member of r signed an
// item for (be), from the roster's history along the chain from r; when it
// cannot be had, this machine may be behind.
func (h *handle) catchUp(r roster, be *team.BehindError, history func(int64) []byte) (roster, error) {
	data := history(be.Version)
	if data == nil || r.data == nil {
		return roster{}, h.behind(fmt.Sprintf("%s, and roster v%d cannot be read from etcd", be.Error(), be.Version))
	}
	nr, err := team.Accept(h.name(), r.data, data, history)
	if err != nil {
		return roster{}, h.behind(fmt.Sprintf("%s, and roster v%d does not chain to it: %v", be.Error(), be.Version, err))
	}
	p, err := h.pin(nr, data, 0)
	p.Rev, p.At = r.Rev, r.At
	return p, err
}

// historyFrom reads older rosters from etcd, one Get each (rare: only when
// the roster moved by more than one version since this machine looked).
func (h *handle) historyFrom(ctx context.Context, cli team.Driver) func(int64) []byte {
	return func(v int64) []byte {
		kvs, _, err := cli.Get(ctx, rosterHistoryKey(h.name(), v))
		if err != nil || kvs[0] == nil {
			return nil
		}
		return kvs[0].Value
	}
}

// openItem verifies a stored item against r before anything of it is
// decrypted, then decrypts and unmarshals it into v. A token set must also
// pass a server answer's checks. A record older than one of the same item
// this machine accepted is refused (a rollback). An item a member signed
// for a later roster is a *team.BehindError: the caller catches up.
func (h *handle) openItem(r roster, kind, id string, value []byte, v any) error {
	ct, seq, err := team.OpenItem(h.name(), kind, id, r.Roster, value)
	if err != nil {
		var be *team.BehindError
		if errors.As(err, &be) {
			return be
		}
		return h.refused("an item", err)
	}
	if err := h.notRolledBack(kind, id, seq); err != nil {
		return err
	}
	if err := h.decode(ct, v); err != nil {
		return err
	}
	if ts, ok := v.(*auth.TokenSet); ok {
		if err := ts.CheckStored(); err != nil {
			return h.refused("the token set of key "+id, fmt.Errorf("%v: %w", err, team.ErrForged))
		}
	}
	h.saw(kind, id, seq)
	return nil
}

// seenSeqs is the highest sequence number this machine accepted per item
// (team.PinState.Seen), read once per read of etcd (freshSeen).
func (h *handle) seenSeqs() map[string]int64 {
	if h.seen == nil {
		h.seen = team.ReadPinState(h.dir()).Seen
	}
	return h.seen
}

// freshSeen keeps what this handle saw and reads the numbers again: a
// handle that lives long (Watch) takes what other processes of this machine
// accepted meanwhile.
func (h *handle) freshSeen() {
	h.saveSeen()
	if !h.seenDirty {
		h.seen = nil
	}
}

// notRolledBack refuses a record of kind/id with a sequence number below
// the highest this machine accepted (a record of an older shipkey has 0: it
// is taken only while no numbered one was).
func (h *handle) notRolledBack(kind, id string, seq int64) error {
	if last := h.seenSeqs()[kind+"/"+id]; seq < last {
		return h.refused(kind+" "+id, fmt.Errorf("it is an older record (number %d) than one this machine accepted (number %d): a rollback: %w", seq, last, team.ErrForged))
	}
	return nil
}

// saw notes that this machine accepted (or wrote) record seq of kind/id;
// saveSeen keeps it.
func (h *handle) saw(kind, id string, seq int64) {
	if m := h.seenSeqs(); seq > m[kind+"/"+id] {
		m[kind+"/"+id] = seq
		h.seenDirty = true
	}
}

// saveSeen merges what this handle saw into the pin state (the highest of
// each, whatever other processes of this machine saw meanwhile).
func (h *handle) saveSeen() {
	if !h.seenDirty {
		return
	}
	err := h.updatePinState(func(ps *team.PinState) {
		for k, v := range h.seen {
			ps.Seen[k] = max(ps.Seen[k], v)
		}
	})
	if err == nil {
		h.seenDirty = false
	}
}

// commit is cli.Commit that, when the writes are applied, notes the
// sequence number of every item they write as seen: this machine then
// refuses the records they replaced.
func (h *handle) commit(ctx context.Context, cli team.Driver, conds []cond, ops []op) (bool, int64, error) {
	ok, rev, err := cli.Commit(ctx, conds, ops)
	if err != nil || !ok {
		return ok, rev, err
	}
	t := h.name()
	for _, o := range ops {
		kind, id := "", ""
		switch {
		case o.Delete:
		case strings.HasPrefix(o.Key, keysPrefix(t)):
			kind, id = kindKey, idOf(o.Key, keysPrefix(t))
		case strings.HasPrefix(o.Key, tokensPrefix(t)):
			kind, id = kindToken, idOf(o.Key, tokensPrefix(t))
		}
		if kind != "" {
			h.saw(kind, id, team.ItemSeq(o.Value))
		}
	}
	h.saveSeen()
	return ok, rev, err
}

// sealItem encrypts v to r's members and signs it for kind and id at r's
// version.
func (h *handle) sealItem(r roster, kind, id string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return h.sealPlain(r, kind, id, plain)
}

// sealPlain signs with a sequence number above every record of the item
// this machine saw and every one written up to the revision r was read at
// (the record a write replaces was read at or before r.At, and got its own
// number from a read before its write).
func (h *handle) sealPlain(r roster, kind, id string, plain []byte) (string, error) {
	recips, err := r.recipients()
	if err != nil {
		return "", err
	}
	ct, err := seal(plain, recips)
	if err != nil {
		return "", err
	}
	seq := max(r.At, h.seenSeqs()[kind+"/"+id]) + 1
	return string(team.SignItem(h.name(), kind, id, r.Version, seq, ct, h.signer)), nil
}

// signCatalog is the catalog entry: the id last changed, signed.
func (h *handle) signCatalog(r roster, id string) string {
	return string(team.SignItem(h.name(), kindCatalog, kindCatalog, r.Version, r.At+1, []byte(id), h.signer))
}

// isRefused reports whether err refused forged data.
func isRefused(err error) bool { return errors.Is(err, team.ErrForged) }
