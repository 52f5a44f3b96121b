package store

import (
	"context"
	"errors"
	"time"

	"golang.org/x/oauth2"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// mergeToken joins a key's token metadata with its secret tokens.
func mergeToken(meta auth.TokenSet, sec keySecrets) *auth.TokenSet {
	ts := meta
	ts.AccessToken, ts.RefreshToken, ts.IDToken = sec.AccessToken, sec.RefreshToken, sec.IDToken
	return &ts
}

// TokenOptions say what a caller of Token needs.
type TokenOptions struct {
	// MarkUsed sets the key's Last Used: the token is handed out.
	MarkUsed bool
	// MinValid asks for a token valid for at least this long: one that expires
	// sooner is renewed first (token --min-valid, exec). Zero means the
	// lifecycle margin alone (auth.Expiry).
	MinValid time.Duration
}

// Token hands out the key's access token by the one lifecycle policy
// (auth.Expiry): the stored token while it is valid for opts.MinValid and not
// due, else a renewed one (see renew). Network and server failures are
// returned as they are and leave the key untouched. In a process that
// follows the session, a token it handed out is handed out again while the
// session is locked and the token will do (handedOut).
func (s *Store) Token(ctx context.Context, label string, opts TokenOptions) (*auth.TokenSet, error) {
	id, ts, err := s.token(ctx, label, opts)
	return s.handOut(ctx, label, "", opts.MinValid, opts.MarkUsed, id, ts, err)
}

// token is Token, with the key's id when it was found.
func (s *Store) token(ctx context.Context, label string, opts TokenOptions) (string, *auth.TokenSet, error) {
	if _, err := s.prepare(); err != nil {
		return "", nil, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return "", nil, err
	}
	if !ks.LoggedOut && ks.Token.Access().ValidFor(s.now(), opts.MinValid) {
		// The metadata says the stored token will do: only then is the
		// secrets backend asked for it.
		sec, err := s.getSecrets(e.Label, e.ID, ks)
		if err != nil {
			return e.ID, nil, err
		}
		if ts := mergeToken(ks.Token, sec); ts.AccessToken != "" {
			if opts.MarkUsed && !usedRecently(ks.LastUsed, s.now()) {
				if err := s.markUsedID(ctx, e); err != nil {
					return e.ID, nil, err
				}
			}
			return e.ID, ts, nil
		}
	}
	s.hold.drop() // no read lock held across the network
	ts, err := s.renew(ctx, e, renewOptions{TokenOptions: opts})
	return e.ID, ts, err
}

// Refresh forces a renewal now (the TUI's "refresh now"), persisting the
// result, and returns the key with the token set it now holds. When the
// refresh token is dead and the key's grant cannot run unattended, the error
// wraps ErrLoginNeeded; a still valid access token is kept then.
func (s *Store) Refresh(ctx context.Context, label string) (Key, *auth.TokenSet, error) {
	if _, err := s.prepare(); err != nil {
		return Key{}, nil, err
	}
	e, _, err := s.find(label)
	if err != nil {
		return Key{}, nil, err
	}
	ts, err := s.renew(ctx, e, renewOptions{force: true})
	if err != nil {
		return Key{}, nil, err
	}
	k, err := s.keyByID(e.ID, label)
	if err != nil {
		return Key{}, nil, err
	}
	return k, ts, nil
}

// lastUsedStep is how stale Last Used may be. It is advisory and shown to the
// minute ("just now", "3 min ago"), so a key handed out again within a minute
// of its recorded use is not written again: a script that calls shipkey token
// in a loop writes state.db at most once a minute per key, not on every call.
const lastUsedStep = time.Minute

// usedRecently reports whether last is less than lastUsedStep before now.
func usedRecently(last, now time.Time) bool {
	d := now.Sub(last)
	return !last.IsZero() && d >= 0 && d < lastUsedStep
}

// markUsedID sets the Last Used of key e: one state record is written.
func (s *Store) markUsedID(ctx context.Context, e keyEntry) error {
	return s.changeState(ctx, e.ID, e.Label, func(ks *keyState) error {
		ks.LastUsed = s.now()
		return nil
	})
}

// renewOptions: what Token asked, and whether renewal is forced (refresh
// now) even when the stored token would do.
type renewOptions struct {
	TokenOptions
	force bool
}

// renewal is one renewal of a key under its refresh lock: what was read
// after the lock was taken, and why only a login can help once a step found
// the session dead.
type renewal struct {
	e    keyEntry
	ks   keyState
	sec  keySecrets
	cur  *auth.TokenSet // the stored token set with its secrets (empty after logout)
	now  time.Time
	opts renewOptions

	dead error  // the auth error that showed only a login can help
	why  string // the same, in a few words
}

// renewStep is one link of the renewal chain: it returns a token set to hand
// out (fresh reports whether it is new and must be persisted), or nil to pass
// on to the next link; an error ends the chain.
type renewStep func(ctx context.Context, r *renewal) (ts *auth.TokenSet, fresh bool, err error)

// renew takes the key's refresh lock, re-reads its state and secrets, and
// runs the chain: reuse a token another process just got, refresh grant,
// the key's own grant when it can run unattended (client credentials, or the
// password grant with a remembered password); when every link passes, a
// login is needed. A new token set is persisted before it is handed out.
func (s *Store) renew(ctx context.Context, e keyEntry, opts renewOptions) (*auth.TokenSet, error) {
	if s.auth == nil {
		return nil, errNoAuth
	}
	lk, err := acquireLock(ctx, s.refreshLockPath(e.ID))
	if err != nil {
		return nil, err
	}
	defer lk.release()

	e, ks, err := s.findID(e.ID, e.Label)
	if err != nil {
		return nil, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return nil, err
	}
	r := &renewal{e: e, ks: ks, sec: sec, cur: mergeToken(ks.Token, sec), now: s.now(), opts: opts}
	if ks.LoggedOut {
		r.cur = &auth.TokenSet{}
	}
	for _, step := range []renewStep{s.reuseStored, s.refreshGrant, s.unattendedGrant} {
		ts, fresh, err := step(ctx, r)
		if err != nil {
			return nil, err
		}
		if ts == nil {
			continue
		}
		if fresh {
			if err := s.persist(ctx, e, ts, r.sec, opts.MarkUsed); err != nil {
				return nil, err
			}
		} else if opts.MarkUsed {
			if err := s.markUsedID(ctx, e); err != nil {
				return nil, err
			}
		}
		return ts, nil
	}
	return nil, s.loginNeeded(ctx, r)
}

// reuseStored hands out the stored token when it will do: another process
// may have renewed it while this one waited for the lock.
func (s *Store) reuseStored(_ context.Context, r *renewal) (*auth.TokenSet, bool, error) {
	if r.opts.force || r.cur.AccessToken == "" || !r.cur.Access().ValidFor(r.now, r.opts.MinValid) {
		return nil, false, nil
	}
	return r.cur, false, nil
}

// refreshGrant redeems the refresh token. A refusal that means the session is
// over (auth.KindLoginRequired) passes on to the next link; any other
// failure ends the chain.
func (s *Store) refreshGrant(ctx context.Context, r *renewal) (*auth.TokenSet, bool, error) {
	switch {
	case r.cur.RefreshValid(r.now):
	case r.ks.LoggedOut:
		r.why = "logged out"
		return nil, false, nil
	case r.cur.RefreshToken == "" && r.cur.AccessToken == "":
		r.why = "no token yet"
		return nil, false, nil
	case r.cur.RefreshToken == "":
		r.why = "the access token expired and there is no refresh token"
		return nil, false, nil
	default:
		r.why = "the refresh token expired at " + text.Stamp(r.cur.RefreshExpiresAt)
		return nil, false, nil
	}
	ts, err := s.auth.Refresh(ctx, r.e.Connection, r.sec.authOf(r.e.Definition), r.cur)
	if err == nil {
		return ts, true, nil
	}
	if !auth.IsLoginRequired(err) {
		return nil, false, err
	}
	r.dead, r.why = err, "the server refused the refresh token"
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Description != "" {
		r.why += ": " + ae.Description
	}
	return nil, false, nil
}

// unattendedGrant runs the key's grant again when it needs no person: the
// client credentials grant, or the password grant with a remembered
// password. A refusal that only a person can fix (wrong password, a client
// secret or grant no longer accepted) passes on (a login is needed); any
// other failure ends the chain and leaves the key as it was.
func (s *Store) unattendedGrant(ctx context.Context, r *renewal) (*auth.TokenSet, bool, error) {
	g, err := auth.GrantFor(r.e.Grant)
	if err != nil {
		return nil, false, err
	}
	if !g.Unattended(auth.Kept{Password: r.e.RememberPassword && r.sec.Password != ""}) {
		return nil, false, nil
	}
	ts, err := g.Obtain(ctx, s.auth, r.e.request(r.sec))
	if err == nil {
		if r.dead != nil {
			r.sec.Derived = nil // the old session ended: so did the tokens derived from it
		}
		return ts, true, nil
	}
	k := auth.KindOf(err)
	switch {
	case r.e.Grant.Or() == auth.GrantPassword && (k == auth.KindInvalidCredentials || k == auth.KindAccountDisabled ||
		k == auth.KindAccountNotSetUp || k == auth.KindLoginRequired):
		r.why = "the remembered password was refused"
	case r.e.Grant.Or() != auth.GrantPassword && (k == auth.KindInvalidClient || k == auth.KindGrantNotAllowed || k == auth.KindLoginRequired):
		r.why = "the server refused the " + r.e.Grant.String() + " grant"
	default:
		return nil, false, err
	}
	r.dead = errors.Join(r.dead, err)
	return nil, false, nil
}

// loginNeeded is the end of the chain: the key is marked logged out (unless a
// forced refresh failed while its access token still works) and the error
// says a login is needed and why.
func (s *Store) loginNeeded(ctx context.Context, r *renewal) error {
	dead := r.dead
	if dead == nil {
		dead = &auth.Error{Kind: auth.KindLoginRequired, Op: "refresh", Msg: r.why, Hint: "log in again"}
	}
	lne := &LoginNeededError{Label: r.e.Label, Why: r.why, Err: dead}
	if r.opts.force && r.cur.AccessToken != "" && !r.cur.Access().Expired(r.now) {
		// The access token still works: keep it, only say a login is due.
		return lne
	}
	if r.ks.LoggedOut {
		return lne
	}
	err := s.changeState(ctx, r.e.ID, r.e.Label, func(ks *keyState) error {
		ks.LoggedOut = true
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		err = nil // removed meanwhile
	}
	if err != nil {
		return errors.Join(lne, err)
	}
	return lne
}

// Current returns the key's stored token set (with secrets) without refreshing
// or marking use: for display and inspection. A key without a token (never
// logged in, logged out, or its session known ended) gives an error wrapping
// ErrLoginNeeded.
func (s *Store) Current(label string) (*auth.TokenSet, error) {
	e, ks, err := s.loggedIn(label)
	if err != nil {
		return nil, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return nil, err
	}
	if sec.AccessToken == "" {
		return nil, &LoginNeededError{Label: e.Label, Why: "no token yet"}
	}
	return mergeToken(ks.Token, sec), nil
}

// loggedIn prepares the backend and finds key label, which must not be
// logged out (an error wrapping ErrLoginNeeded).
func (s *Store) loggedIn(label string) (keyEntry, keyState, error) {
	if _, err := s.prepare(); err != nil {
		return keyEntry{}, keyState{}, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return keyEntry{}, keyState{}, err
	}
	if ks.LoggedOut {
		return keyEntry{}, keyState{}, &LoginNeededError{Label: e.Label, Why: "logged out"}
	}
	return e, ks, nil
}

// Liveness asks the server whether it still accepts the key's access token.
func (s *Store) Liveness(ctx context.Context, label string) (auth.Liveness, error) {
	if s.auth == nil {
		return auth.Liveness{}, errNoAuth
	}
	e, ks, err := s.loggedIn(label)
	if err != nil {
		return auth.Liveness{}, err
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return auth.Liveness{}, err
	}
	if sec.AccessToken == "" {
		return auth.Liveness{}, &LoginNeededError{Label: e.Label, Why: "no token yet"}
	}
	return s.auth.Liveness(ctx, e.Connection, sec.authOf(e.Definition), sec.AccessToken), nil
}

// TokenSource returns an oauth2.TokenSource for the key: every token it
// hands out comes from Token (cached, refreshed and persisted by the store,
// so other processes see it), reused in memory until its margin (auth.Expiry). ctx bounds the refreshes it triggers.
func (s *Store) TokenSource(ctx context.Context, label string) oauth2.TokenSource {
	// The token handed to x/oauth2 carries Expiry = RenewAt, so its own early
	// expiry is a nanosecond (0 would mean its 10 s default).
	return oauth2.ReuseTokenSourceWithExpiry(nil, &storeTokenSource{ctx: ctx, s: s, label: label}, time.Nanosecond)
}

// storeTokenSource is the store's token source as an oauth2.TokenSource.
type storeTokenSource struct {
	ctx   context.Context
	s     *Store
	label string
}

func (ts *storeTokenSource) Token() (*oauth2.Token, error) {
	set, err := ts.s.Token(ts.ctx, ts.label, TokenOptions{})
	if err != nil {
		return nil, err
	}
	return set.OAuth2(), nil
}
