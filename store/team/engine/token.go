package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// fits reports whether ts can be handed out at now for opts.
func fits(ts *auth.TokenSet, now time.Time, opts TokenOptions) bool {
	return !opts.Force && ts != nil && ts.AccessToken != "" && ts.Access().ValidFor(now, opts.MinValid)
}

// Token hands out the access token of team key label: the cached one while
// it will do, etcd still holds it and the roster key is as pinned (one read
// of both: a logout or a renewal on another machine replaced it, a roster
// written since is read first); else, under the key's local file lock, the
// shared one from etcd; else one renewal for the whole fleet under the
// team-wide mutex. When etcd does not answer within the bound, a cached
// token that has not expired is handed out with a warning; otherwise the
// error wraps ErrUnavailable. A machine that may be behind the team's
// roster hands out nothing (team.ErrBehind).
func (e *Engine) Token(ctx context.Context, team, label string, opts TokenOptions) (*auth.TokenSet, error) {
	h, err := e.open(team)
	if err != nil {
		return nil, err
	}
	defer h.close()
	// Every wait of this call ends at one deadline, the team's bound: etcd,
	// and the local lock behind other processes of this machine that wait
	// on etcd too (they queued one bound each before).
	ctx, cancel := h.bound(ctx)
	defer cancel()
	started := e.opts.Now()
	cached := h.readCache().ByLabel(label)
	stale := int64(-1) // the revision of a cached token etcd no longer holds
	if cached != nil && fits(cached.Token, e.opts.Now(), opts) {
		if ts, handed, err := h.handCached(ctx, cached); handed || err != nil {
			return ts, err
		}
		stale = cached.TokenRev
	}
	unlock, err := h.lockFile(ctx, lockName(label, cached))
	if err != nil {
		return h.lockWaitFailed(ctx, cached, err)
	}
	defer unlock()
	// etcd failed another process of this machine while this one waited
	// for the lock: do not wait on it a second time.
	if at, ok := h.unreachableSince(); ok && !at.Before(started) {
		return h.outage(cached, &Error{Team: h.name(), Kind: ErrUnavailable,
			Msg: fmt.Sprintf("etcd at %s did not answer within %s (unreachable or no quorum)", strings.Join(h.tc.Endpoints, ","), h.timeout)})
	}
	// Another process of this machine may have done the work meanwhile.
	if ce := h.readCache().ByLabel(label); ce != nil && ce.TokenRev != stale && fits(ce.Token, e.opts.Now(), opts) && !opts.Force {
		return ce.Token, nil
	} else if ce != nil {
		cached = ce
	}
	return h.sharedToken(ctx, label, cached, opts)
}

// handCached hands out cached, a token that fits, when etcd still holds it
// (one small read: a logout elsewhere deletes it, a renewal replaces it) or
// does not answer (with a warning). handed is false when etcd holds another
// token set; err is an error other than etcd's unavailability.
func (h *handle) handCached(ctx context.Context, cached *cacheEntry) (_ *auth.TokenSet, handed bool, _ error) {
	// etcd did not answer a moment ago: a script calling token in a loop
	// through an outage waits out the bound once per OutageMemory, not at
	// every call.
	if at, ok := h.unreachableSince(); ok {
		h.warnCachedWithoutAsking(cached, at)
		return cached.Token, true, nil
	}
	current, err := h.stillShared(ctx, cached)
	switch {
	case err == nil:
		if current {
			return cached.Token, true, nil
		}
		return nil, false, nil
	case !errors.Is(err, ErrUnavailable):
		return nil, false, err
	}
	h.markUnreachable()
	h.warnCached(cached)
	return cached.Token, true, nil
}

// lockName names the local lock of key label: by its id when cached, else
// by the label's hash (a label is user input, never a file name itself).
func lockName(label string, cached *cacheEntry) string {
	if cached != nil {
		return "key-" + cached.Def.ID + ".lock"
	}
	return fmt.Sprintf("label-%x.lock", sha256.Sum256([]byte(label)))
}

// lockWaitFailed ends a Token call whose wait for the local lock failed
// with err: an outage when the bound passed (another process of this
// machine was waiting on etcd), else err.
func (h *handle) lockWaitFailed(ctx context.Context, cached *cacheEntry, err error) (*auth.TokenSet, error) {
	if ctx.Err() == nil {
		return nil, err
	}
	return h.outage(cached, &Error{Team: h.name(), Kind: ErrUnavailable,
		Msg: fmt.Sprintf("etcd at %s did not answer within %s (another shipkey process of this machine was waiting on it)", strings.Join(h.tc.Endpoints, ","), h.timeout)})
}

// sharedToken is key label's token from etcd (renewed once for the fleet
// when due), or on an outage the cached one while it has not expired.
func (h *handle) sharedToken(ctx context.Context, label string, cached *cacheEntry, opts TokenOptions) (*auth.TokenSet, error) {
	ts, err := h.fleetTokenRetry(ctx, label, cached, opts)
	switch {
	case err == nil:
		_ = os.Remove(h.unreachablePath()) // etcd answers again
		return ts, nil
	case errors.Is(err, ErrUnavailable):
		return h.outage(cached, err)
	}
	return nil, err
}

// outage ends a Token call that etcd did not answer: the cached token while
// it has not expired, with a warning, else err (which wraps ErrUnavailable).
func (h *handle) outage(cached *cacheEntry, err error) (*auth.TokenSet, error) {
	h.markUnreachable()
	if cached != nil && cached.Token != nil && cached.Token.AccessToken != "" && !cached.Token.Access().Expired(h.e.opts.Now()) {
		h.warnCached(cached)
		return cached.Token, nil
	}
	return nil, err
}

// OutageMemory is how long after etcd failed to answer a valid cached
// token is handed out without asking etcd again.
const OutageMemory = 30 * time.Second

// unreachablePath holds when etcd last failed to answer this machine (a
// time, no secret); it is removed when etcd answers.
func (h *handle) unreachablePath() string { return filepath.Join(h.dir(), team.UnreachableFileName) }

// unreachableSince reports when etcd last failed to answer, if that was
// under OutageMemory ago by the engine's clock.
func (h *handle) unreachableSince() (time.Time, bool) {
	b, err := os.ReadFile(h.unreachablePath())
	if err != nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, false
	}
	age := h.e.opts.Now().Sub(at)
	return at, age >= 0 && age < OutageMemory
}

// markUnreachable notes that etcd did not answer now (best effort: without
// the note the next call only waits the bound again).
func (h *handle) markUnreachable() {
	if err := os.MkdirAll(h.dir(), 0o700); err == nil {
		_ = writeAtomic(h.unreachablePath(), []byte(h.e.opts.Now().UTC().Format(time.RFC3339Nano)+"\n"))
	}
}

// warnCachedWithoutAsking says that ce's token is handed out without asking
// etcd, which did not answer at at.
func (h *handle) warnCachedWithoutAsking(ce *cacheEntry, at time.Time) {
	fmt.Fprintln(h.e.opts.Warn, text.Cleanf("shipkey: warning: team %s: etcd did not answer at %s (under %s ago); handing out the cached token of %s without asking (valid until %s)",
		h.name(), text.Stamp(at), OutageMemory, Address(h.name(), ce.Def.Label), text.Stamp(ce.Token.AccessExpiry())))
}

// warnCached says that ce's token is handed out without etcd.
func (h *handle) warnCached(ce *cacheEntry) {
	fmt.Fprintln(h.e.opts.Warn, text.Cleanf("shipkey: warning: team %s: etcd did not answer within %s; handing out the cached token of %s (valid until %s)",
		h.name(), h.timeout, Address(h.name(), ce.Def.Label), text.Stamp(ce.Token.AccessExpiry())))
}

// stillShared reports whether etcd still holds the token set ce cached, at
// the revision cached, and the roster this machine pinned, at the revision
// pinned: one linearizable read of both, within the bound. A roster written
// since (a change of members, or one written back over a removal) is the
// slow path's to look at.
func (h *handle) stillShared(ctx context.Context, ce *cacheEntry) (bool, error) {
	cli, err := h.client()
	if err != nil {
		return false, err
	}
	ctx, cancel := h.bound(ctx)
	defer cancel()
	kvs, _, err := cli.Get(ctx, tokenKey(h.name(), ce.Def.ID), rosterKey(h.name()))
	if err != nil {
		return false, h.etcdErr(err)
	}
	_ = os.Remove(h.unreachablePath()) // etcd answers again
	pinRev := team.PinnedRosterRev(h.dir())
	return ce.TokenRev != 0 && kvs[0] != nil && kvs[0].Rev == ce.TokenRev &&
		pinRev != 0 && kvs[1] != nil && kvs[1].Rev == pinRev, nil
}

// fleetTokenRetry runs fleetToken until it succeeds, fails for a reason
// other than etcd's availability (a leader election, a lost connection),
// or the team's bound passes.
func (h *handle) fleetTokenRetry(ctx context.Context, label string, cached *cacheEntry, opts TokenOptions) (*auth.TokenSet, error) {
	ctx, cancel := h.bound(ctx)
	defer cancel()
	for {
		ts, err := h.fleetToken(ctx, label, cached, opts)
		if err == nil || !errors.Is(err, ErrUnavailable) || !pause(ctx) {
			return ts, err
		}
	}
}

// pause waits a little before a retry; false when ctx ended.
func pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// fleetToken is the etcd part of Token, bounded by ctx.
func (h *handle) fleetToken(ctx context.Context, label string, cached *cacheEntry, opts TokenOptions) (*auth.TokenSet, error) {
	cli, err := h.client()
	if err != nil {
		return nil, err
	}
	id, cur, rev, def, err := h.findItem(ctx, cli, label, cached)
	if err != nil {
		return nil, err
	}
	if fits(cur, h.e.opts.Now(), opts) {
		return cur, h.cacheToken(ctx, def, cur, rev)
	}
	return h.renew(ctx, cli, label, id, opts)
}

// findItem finds key label's id, definition and token (at its revision).
// The cached id saves a listing; the definition and token are read again in
// one round trip (it may have been renamed or removed meanwhile).
func (h *handle) findItem(ctx context.Context, cli team.Driver, label string, cached *cacheEntry) (id string, cur *auth.TokenSet, rev int64, def Definition, err error) {
	var d *Definition
	if cached != nil && cached.Def.ID != "" {
		id = cached.Def.ID
		if cur, rev, d, err = h.readItem(ctx, cli, id); err != nil {
			return "", nil, 0, Definition{}, err
		}
	}
	if d != nil && d.Label == label {
		return id, cur, rev, *d, nil
	}
	s, err := h.read(ctx)
	if err != nil {
		return "", nil, 0, Definition{}, err
	}
	ce := (&cacheFile{Keys: s.entries}).ByLabel(label)
	if ce == nil {
		return "", nil, 0, Definition{}, text.Errorf("team %s: no key %s (shipkey keys list): %w", h.name(), label, ErrKeyNotFound)
	}
	return ce.Def.ID, ce.Token, ce.TokenRev, ce.Def, nil
}

// renew renews key id's token once for the fleet: under the team-wide
// mutex on a lease (a holder that dies frees it within the TTL), unless
// another machine renewed it first.
func (h *handle) renew(ctx context.Context, cli team.Driver, label, id string, opts TokenOptions) (*auth.TokenSet, error) {
	mu, err := h.lockKey(ctx, cli, id)
	if err != nil {
		return nil, err
	}
	defer mu.Unlock()
	cur, rev, d, err := h.readItem(ctx, cli, id)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, text.Errorf("team %s: key %s was removed: %w", h.name(), label, ErrKeyNotFound)
	}
	if fits(cur, h.e.opts.Now(), opts) {
		return cur, h.cacheToken(ctx, *d, cur, rev)
	}
	ts, err := h.obtain(ctx, *d, cur)
	if err != nil {
		return nil, err
	}
	return h.writeRenewed(ctx, cli, mu, *d, id, ts, rev)
}

// again reports whether err is etcd's unavailability and, after a pause,
// ctx still runs: worth another try.
func again(ctx context.Context, err error) bool {
	return errors.Is(err, ErrUnavailable) && pause(ctx)
}

// writeRenewed writes ts, key id's renewed token, for the roster as it is
// now, only while this machine still owns the mutex mu and nobody wrote the
// token since its revision rev; a few tries.
func (h *handle) writeRenewed(ctx context.Context, cli team.Driver, mu team.Lock, def Definition, id string, ts *auth.TokenSet, rev int64) (*auth.TokenSet, error) {
	for range 10 {
		r, err := h.readRoster(ctx)
		if again(ctx, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, err := h.sealItem(r, kindToken, id, ts)
		if err != nil {
			return nil, err
		}
		ok, wrev, err := h.commit(ctx, cli, []cond{
			mu.Held(),
			revIs(tokenKey(h.name(), id), rev),
			revIs(rosterKey(h.name()), r.Rev),
		}, []op{put(tokenKey(h.name(), id), v)})
		switch {
		case err != nil:
			var ours bool
			if rev, ours, err = h.afterLostWrite(ctx, cli, id, ts, rev, h.etcdErr(err)); ours {
				return ts, h.cacheToken(ctx, def, ts, rev)
			}
		case ok:
			return ts, h.cacheToken(ctx, def, ts, wrev)
		default:
			// The roster changed (re-encrypted items) or the lock was lost:
			// take the token's new revision and write again, still the only
			// renewal.
			rev, err = h.tokenRev(ctx, cli, id, rev)
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, &Error{Team: h.name(), Msg: "the team keeps changing; try again"}
}

// afterLostWrite looks at what etcd holds after writing ts failed with err
// (a leader lost mid-request: the write may or may not have been applied).
// ours: etcd holds ts, at rev; otherwise the write is to be tried again at
// rev, or, when err is not worth another try, err is returned.
func (h *handle) afterLostWrite(ctx context.Context, cli team.Driver, id string, ts *auth.TokenSet, rev int64, err error) (_ int64, ours bool, _ error) {
	if !again(ctx, err) {
		return rev, false, err
	}
	stored, srev, _, rerr := h.readItem(ctx, cli, id)
	if rerr != nil {
		return rev, false, nil
	}
	return srev, stored != nil && stored.AccessToken == ts.AccessToken, nil
}

// tokenRev is key id's token's revision now (rev when it has none, or when
// etcd did not answer and another try is worth it).
func (h *handle) tokenRev(ctx context.Context, cli team.Driver, id string, rev int64) (int64, error) {
	kvs, _, err := cli.Get(ctx, tokenKey(h.name(), id))
	if err != nil {
		if err = h.etcdErr(err); !again(ctx, err) {
			return rev, err
		}
		return rev, nil
	}
	if kvs[0] != nil {
		return kvs[0].Rev, nil
	}
	return rev, nil
}

// readItem reads the roster and a key's definition and token in one round
// trip and verifies them; a nil definition means the key is gone. A token
// set no member wrote (or a rollback) is said and read as none (a renewal
// replaces it); a definition no member wrote is refused.
func (h *handle) readItem(ctx context.Context, cli team.Driver, id string) (*auth.TokenSet, int64, *Definition, error) {
	kvs, at, err := cli.Get(ctx, rosterKey(h.name()), keyKey(h.name(), id), tokenKey(h.name(), id))
	if err != nil {
		return nil, 0, nil, h.etcdErr(err)
	}
	h.freshSeen()
	rk, dk, tk := kvs[0], kvs[1], kvs[2]
	if rk == nil {
		return nil, 0, nil, &Error{Team: h.name(), Msg: "etcd holds no such team", Kind: ErrNoTeam}
	}
	history := h.historyFrom(ctx, cli)
	r, err := h.accept(ctx, rk.Value, rk.Rev, at, history, false)
	if err != nil {
		return nil, 0, nil, err
	}
	if dk == nil {
		return nil, 0, nil, nil
	}
	for {
		ts, d, err := h.openPair(ctx, r, id, dk, tk)
		var be *team.BehindError
		if errors.As(err, &be) {
			if r, err = h.catchUp(r, be, history); err != nil {
				return nil, 0, nil, err
			}
			continue
		}
		if err != nil {
			return nil, 0, nil, err
		}
		h.saveSeen()
		if tk == nil {
			return ts, 0, d, nil
		}
		return ts, tk.Rev, d, nil
	}
}

// openPair verifies and decrypts a key's definition dk and token set tk
// (nil: none) against r; a token set refused is said and read as none.
func (h *handle) openPair(ctx context.Context, r roster, id string, dk, tk *team.KV) (*auth.TokenSet, *Definition, error) {
	if !h.hasMe(r) {
		h.markRemoved(ctx)
		return nil, nil, h.notMember()
	}
	var d Definition
	if err := h.openItem(r, kindKey, id, dk.Value, &d); err != nil {
		return nil, nil, err
	}
	if d.ID != id {
		return nil, nil, h.refused("key "+id, text.Errorf("it holds the definition of key %s: %w", d.ID, team.ErrForged))
	}
	if tk == nil {
		return nil, &d, nil
	}
	var ts auth.TokenSet
	if err := h.openItem(r, kindToken, id, tk.Value, &ts); err != nil {
		if !isRefused(err) {
			return nil, nil, err
		}
		h.warnRefused(err)
		return nil, &d, nil
	}
	return &ts, &d, nil
}

func (h *handle) cacheToken(ctx context.Context, def Definition, ts *auth.TokenSet, rev int64) error {
	// The token is the team's already: keep it here even when the caller's
	// bound ran out meanwhile (the cache lock has a bound of its own).
	return h.updateCache(context.WithoutCancel(ctx), func(c *cacheFile) {
		for id, e := range c.Keys {
			if e.Def.Label == def.Label && id != def.ID {
				delete(c.Keys, id)
			}
		}
		c.Keys[def.ID] = &cacheEntry{Def: def, Token: ts, TokenRev: rev}
	})
}

// obtain gets a new token set for def: the refresh grant while there is a
// refresh token, else the key's grant when it runs unattended (client
// credentials; the password grant with the team's kept password). An
// interactive grant (device code, authorization code) whose refresh token is
// dead needs a person: the error wraps store.ErrLoginNeeded.
func (h *handle) obtain(ctx context.Context, def Definition, cur *auth.TokenSet) (*auth.TokenSet, error) {
	a := h.e.opts.Auth
	if a == nil {
		return nil, errors.New("team: no auth client")
	}
	if cur != nil && cur.RefreshToken != "" && (cur.RefreshExpiresAt.IsZero() || cur.RefreshValid(h.e.opts.Now())) {
		ts, err := a.Refresh(ctx, def.Connection, def.ClientAuth(), cur)
		if err == nil || !auth.IsLoginRequired(err) {
			return ts, err
		}
	}
	g, err := auth.GrantFor(def.Grant)
	if err != nil {
		return nil, err
	}
	if !g.Unattended(auth.Kept{Password: def.Password != ""}) {
		return nil, &store.LoginNeededError{Label: Address(h.name(), def.Label), Why: "its " + def.Grant.String() + " grant needs a person and the refresh token is gone"}
	}
	return g.Obtain(ctx, a, def.Request())
}
