package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
func (h *handle) pinPath() string { return filepath.Join(h.dir(), "roster.pin") }

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

// accept checks the roster etcd holds (data, at mod revision rev) against
// this machine's pin and moves the pin forward; history reads older
// versions when the roster moved by more than one. Without a pin, only
// Join (tofu) accepts: trust on first use of the founding roster. A roster
// refused is said in one line and the pinned one is used instead (with
// etcd's revision, so that writes still compare it): items are verified
// against, and encrypted to, the members this machine trusts, and a
// member's next roster change writes a signed roster over the forged one.
func (h *handle) accept(data []byte, rev int64, history func(int64) []byte, tofu bool) (roster, error) {
	r, err := h.acceptStrict(data, rev, history, tofu)
	if err == nil || !isRefused(err) {
		return r, err
	}
	pin := h.pinned()
	if pin == nil {
		return r, err
	}
	pr, _, perr := team.ParseRoster(h.name(), pin)
	if perr != nil {
		return r, err
	}
	h.warnRefused(fmt.Errorf("%w; using the roster v%d this machine pinned", err, pr.Version))
	return roster{Roster: pr, Rev: rev}, nil
}

func (h *handle) acceptStrict(data []byte, rev int64, history func(int64) []byte, tofu bool) (roster, error) {
	if team.IsUnsignedRoster(data) {
		return roster{}, &Error{Team: h.name(), Kind: team.ErrUnsigned,
			Msg: "its roster is unsigned (made by an older shipkey): its founder signs it with `shipkey team init " + h.name() + " --etcd …`, then the others join again"}
	}
	pin := h.pinned()
	if pin == nil && !tofu {
		return roster{}, &Error{Team: h.name(), Kind: team.ErrUnsigned,
			Msg: "this machine has pinned no roster of the team (joined with an older shipkey): run `shipkey team join " + h.name() + " --etcd …` again and compare the fingerprints"}
	}
	r, err := team.Accept(h.name(), pin, data, history)
	if err != nil {
		return roster{}, h.refused("the roster", err)
	}
	if pin == nil || string(pin) != string(data) {
		if err := os.MkdirAll(h.dir(), 0o700); err != nil {
			return roster{}, err
		}
		if err := writeAtomic(h.pinPath(), data); err != nil {
			return roster{}, err
		}
	}
	return roster{Roster: r, Rev: rev}, nil
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
// pass a server answer's checks.
func (h *handle) openItem(r roster, kind, id string, value []byte, v any) error {
	ct, err := team.OpenItem(h.name(), kind, id, r.Roster, value)
	if err != nil {
		return h.refused("an item", err)
	}
	if err := h.decode(ct, v); err != nil {
		return err
	}
	if ts, ok := v.(*auth.TokenSet); ok {
		if err := ts.CheckStored(); err != nil {
			return h.refused("the token set of key "+id, fmt.Errorf("%v: %w", err, team.ErrForged))
		}
	}
	return nil
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

func (h *handle) sealPlain(r roster, kind, id string, plain []byte) (string, error) {
	recips, err := r.recipients()
	if err != nil {
		return "", err
	}
	ct, err := seal(plain, recips)
	if err != nil {
		return "", err
	}
	return string(team.SignItem(h.name(), kind, id, r.Version, ct, h.signer)), nil
}

// signCatalog is the catalog entry: the id last changed, signed.
func (h *handle) signCatalog(r roster, id string) string {
	return string(team.SignItem(h.name(), kindCatalog, kindCatalog, r.Version, []byte(id), h.signer))
}

// isRefused reports whether err refused forged data.
func isRefused(err error) bool { return errors.Is(err, team.ErrForged) }
