package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/team"
)

// lockKey takes the team-wide lock of key id on a lease (a holder that dies
// frees it within the TTL); Unlock gives it back. ctx bounds the grant and
// the wait; the lease is kept alive until Unlock, so a server slower than
// the storage's bound does not lose the lock.
func (h *handle) lockKey(ctx context.Context, cli team.Driver, id string) (team.Lock, error) {
	l, err := cli.Lock(ctx, lockPrefix(h.name(), id), time.Duration(h.e.opts.LockTTL)*time.Second)
	if err != nil {
		return nil, h.etcdErr(err)
	}
	return l, nil
}

// locked is a team key held under its team-wide mutex, read under it.
type locked struct {
	cli    team.Driver
	mu     team.Lock
	def    Definition
	cur    *auth.TokenSet // nil: no shared token set
	rev    int64          // the token's mod revision (0: none)
	catRev int64          // the catalog's, read before the lock
}

// lockItem finds team key label in etcd, takes its team-wide mutex and
// reads its definition and token again under it.
func (h *handle) lockItem(ctx context.Context, label string) (*locked, error) {
	s, err := h.read(ctx)
	if err != nil {
		return nil, err
	}
	ce := (&cacheFile{Keys: s.entries}).ByLabel(label)
	if ce == nil {
		return nil, text.Errorf("team %s: no key %s (shipkey keys list): %w", h.name(), label, ErrKeyNotFound)
	}
	l := &locked{catRev: s.catRev}
	l.cli, _ = h.client()
	if l.mu, err = h.lockKey(ctx, l.cli, ce.Def.ID); err != nil {
		return nil, err
	}
	cur, rev, d, err := h.readItem(ctx, l.cli, ce.Def.ID)
	if err == nil && d == nil {
		err = text.Errorf("team %s: key %s was removed: %w", h.name(), label, ErrKeyNotFound)
	}
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.def, l.cur, l.rev = *d, cur, rev
	return l, nil
}

// Logout ends team key label's session at the server once for the whole
// team, under the key's team-wide mutex (as a renewal), then deletes the
// shared token set with a transaction that checks the revision it read; every
// machine drops its cached token on its next token (Token checks the
// revision it cached). When the server refuses or cannot be reached the
// shared token set is kept (the session is still alive) and the error says
// so; run logout again.
func (e *Engine) Logout(ctx context.Context, team, label string) (LogoutResult, error) {
	h, err := e.open(team)
	if err != nil {
		return LogoutResult{}, err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	l, err := h.lockItem(bctx, label)
	if err != nil {
		return LogoutResult{}, err
	}
	defer l.mu.Unlock()
	def, cur := l.def, l.cur
	var res LogoutResult
	if cur != nil && (cur.AccessToken != "" || cur.RefreshToken != "") {
		if e.opts.Auth == nil {
			return res, errors.New("team: no auth client")
		}
		res.HadToken = true
		// The server's bound is the auth client's own, not etcd's.
		if res.End, err = e.opts.Auth.EndSession(ctx, def.Connection, def.ClientAuth(), cur); err != nil {
			return res, err
		}
	}
	if l.rev != 0 {
		// A bound of its own: the server may have taken the auth timeout.
		tctx, tcancel := h.bound(ctx)
		defer tcancel()
		ok, _, err := l.cli.Commit(tctx, []cond{l.mu.Held(), revIs(tokenKey(team, def.ID), l.rev)}, []op{del(tokenKey(team, def.ID))})
		if err != nil {
			return res, h.etcdErr(err)
		}
		if !ok {
			return res, &Error{Team: team, Msg: "the key's token changed meanwhile (the lock was lost); run logout again"}
		}
	}
	return res, h.updateCache(ctx, func(c *cacheFile) {
		if ce := c.Keys[def.ID]; ce != nil {
			ce.Token, ce.TokenRev = nil, 0
		}
	})
}

// Login gets new tokens for team key label by its grant (client credentials
// run again; the password grant with opts.Password or the kept password),
// under the key's team-wide mutex, and shares them with the team (a
// transaction that checks the revisions it read). Interactive grants are
// refused: team keys run unattended.
func (e *Engine) Login(ctx context.Context, team, label string, opts LoginOptions) (Key, *auth.TokenSet, error) {
	ts, k, err := e.login(ctx, team, label, opts)
	return k, ts, err
}

func (e *Engine) login(ctx context.Context, team, label string, opts LoginOptions) (*auth.TokenSet, Key, error) {
	if e.opts.Auth == nil {
		return nil, Key{}, errors.New("team: no auth client")
	}
	h, err := e.open(team)
	if err != nil {
		return nil, Key{}, err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	l, err := h.lockItem(bctx, label)
	if err != nil {
		return nil, Key{}, err
	}
	defer l.mu.Unlock()
	def, newPassword, g, err := loginGrant(team, label, l.def, opts)
	if err != nil {
		return nil, Key{}, err
	}
	ts, err := g.Obtain(ctx, e.opts.Auth, def.Request())
	if err != nil {
		return nil, Key{}, err
	}
	// A bound of its own: the server may have taken the auth timeout.
	tctx, tcancel := h.bound(ctx)
	defer tcancel()
	rev, err := h.storeLogin(tctx, team, l, def, ts, newPassword)
	if err != nil {
		return nil, Key{}, err
	}
	ce := &cacheEntry{Def: def, Token: ts, TokenRev: rev}
	return ts, h.key(ce, false), h.cacheToken(ctx, def, ts, rev)
}

// loginGrant is the grant a login to team key label (def) runs, and def
// with opts' password when the password grant is given a new one
// (newPassword, then remembered). A grant that needs a person is refused:
// team keys run unattended.
func loginGrant(team, label string, def Definition, opts LoginOptions) (_ Definition, newPassword bool, _ auth.Grant, _ error) {
	g, err := auth.GrantFor(def.Grant)
	if err != nil {
		return def, false, nil, err
	}
	newPassword = opts.Password != "" && opts.Password != def.Password && def.Grant.Or() == auth.GrantPassword
	if newPassword {
		def.Password, def.RememberPassword = opts.Password, true
	}
	if !g.Unattended(auth.Kept{Password: def.Password != ""}) {
		return def, false, nil, text.Errorf("team key %s: its %s grant needs a person; team keys run unattended grants only (client credentials, a password)", Address(team, label), def.Grant.Or())
	}
	return def, newPassword, g, nil
}

// storeLogin writes a login's tokens ts (and def, for a new password) to
// team's etcd for the roster as it is now, and returns the revision written.
// Only while this machine owns the mutex, the key still exists (and, for a
// new password, its definition was not renamed meanwhile), nobody wrote the
// token, and the roster is the one encrypted to.
func (h *handle) storeLogin(ctx context.Context, team string, l *locked, def Definition, ts *auth.TokenSet, newPassword bool) (int64, error) {
	r, err := h.readRoster(ctx)
	if err != nil {
		return 0, err
	}
	tv, err := h.sealItem(r, kindToken, def.ID, ts)
	if err != nil {
		return 0, err
	}
	ops := []op{put(tokenKey(team, def.ID), tv)}
	cmp := []cond{
		l.mu.Held(),
		{Kind: teamExists, Key: keyKey(team, def.ID)},
		revIs(tokenKey(team, def.ID), l.rev),
		revIs(rosterKey(team), r.Rev),
	}
	if newPassword {
		kv, err := h.sealItem(r, kindKey, def.ID, def)
		if err != nil {
			return 0, err
		}
		ops = append(ops, put(keyKey(team, def.ID), kv))
		cmp = append(cmp, revIs(catalogKey(team), l.catRev))
	}
	ok, rev, err := h.commit(ctx, l.cli, cmp, ops)
	if err != nil {
		return 0, h.etcdErr(err)
	}
	if !ok {
		return 0, &Error{Team: team, Msg: "the team changed meanwhile; run login again"}
	}
	return rev, nil
}
