package store

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// Derived tokens are tokens for other audiences (or resources, scopes, token
// types) that a key's own access token was exchanged for (RFC 8693). They
// live in the key's secret record (keySecrets.Derived), one entry per
// auth.Exchange.CacheKey: encrypted as the key's tokens are (in clear only
// in the plaintext backend), removed with the key, dropped when its session
// ends (logout) or a new one starts (login, or the key's grant run again).
// A damaged entry is passed over and replaced by a new exchange.

// maxDerived bounds how many derived tokens a key keeps: the expired go
// first, then those that expire soonest.
const maxDerived = 16

// derivedToken is one cached exchange: what was asked and what came.
type derivedToken struct {
	Exchange auth.Exchange `json:"exchange"`
	Token    auth.TokenSet `json:"token"`
}

// ExchangeOptions say what a caller of ExchangedToken needs.
type ExchangeOptions struct {
	// MarkUsed sets the key's Last Used.
	MarkUsed bool
	// MinValid asks for a token valid for at least this long: a cached one
	// that expires sooner is exchanged again.
	MinValid time.Duration
	// Force exchanges again even when the cached token would do (one the
	// server revoked).
	Force bool
}

// ExchangedToken hands out a token for what x asks, obtained by token
// exchange with the key's access token as the subject and the key's client
// authentication: the cached one while it is valid for opts.MinValid and not
// due, else a new exchange from the key's current token (renewed first when
// due, as Token does), which is then cached with the key's secrets until
// its expiry. A token whose expiry the server did not state is handed out
// but not cached. An exchange the server refused while the subject was near
// its expiry (subjectLapsed) is made once more with a renewed subject. Exchanges of one key are serialized by its refresh lock:
// many processes asking at once after expiry cause one exchange.
func (s *Store) ExchangedToken(ctx context.Context, label string, x auth.Exchange, opts ExchangeOptions) (*auth.TokenSet, error) {
	id, ts, err := s.exchangedToken(ctx, label, x, opts)
	return s.handOut(ctx, label, x.CacheKey(), opts.MinValid, opts.MarkUsed, id, ts, err)
}

// exchangedToken is ExchangedToken, with the key's id when it was found.
func (s *Store) exchangedToken(ctx context.Context, label string, x auth.Exchange, opts ExchangeOptions) (string, *auth.TokenSet, error) {
	if s.auth == nil {
		return "", nil, errNoAuth
	}
	if err := x.Check(); err != nil {
		return "", nil, err
	}
	e, ks, err := s.loggedIn(label)
	if err != nil {
		return "", nil, err
	}
	if !opts.Force {
		sec, err := s.getSecrets(e.Label, e.ID, ks)
		if err != nil {
			return e.ID, nil, err
		}
		if ts := sec.derived(x, s.now(), opts.MinValid); ts != nil {
			return e.ID, ts, s.markUsedIf(ctx, e, ks, opts.MarkUsed)
		}
	}
	s.hold.drop() // no read lock held across the network
	for attempt := 1; ; attempt++ {
		// The retry asks for a subject good for lapseAllowance: the stored
		// token may still look valid to shipkey though the server let it go.
		minSubject := time.Duration(0)
		if attempt > 1 {
			minSubject = lapseAllowance
		}
		id, ts, sent, err := s.exchangeOnce(ctx, &e, x, opts, minSubject)
		if err == nil || sent == nil || attempt > 1 || !subjectLapsed(err, sent, s.now()) {
			return id, ts, err
		}
	}
}

// exchangeOnce takes the key's current token, valid for minSubject, as the
// subject and, under the key's refresh lock, hands out the cached derived
// token when another process exchanged meanwhile, else exchanges the subject
// and caches the new token with the key's secrets. When the server refused
// the exchange it also returns the subject it sent (for subjectLapsed).
func (s *Store) exchangeOnce(ctx context.Context, ep *keyEntry, x auth.Exchange, opts ExchangeOptions, minSubject time.Duration) (id string, ts, refusedSubject *auth.TokenSet, err error) {
	e := *ep
	subject, err := s.Token(ctx, e.Label, TokenOptions{MinValid: minSubject})
	if err != nil {
		return e.ID, nil, nil, err
	}
	lk, err := acquireLock(ctx, s.refreshLockPath(e.ID))
	if err != nil {
		return e.ID, nil, nil, err
	}
	defer lk.release()
	e, ks, err := s.findID(e.ID, e.Label)
	if err != nil {
		return e.ID, nil, nil, err
	}
	*ep = e
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return e.ID, nil, nil, err
	}
	if !opts.Force {
		// Another process may have exchanged while this one waited.
		if ts := sec.derived(x, s.now(), opts.MinValid); ts != nil {
			return e.ID, ts, nil, s.markUsedIf(ctx, e, ks, opts.MarkUsed)
		}
	}
	ts, err = s.auth.Exchange(ctx, e.Connection, sec.authOf(e.Definition), subject.AccessToken, x)
	if err != nil {
		return e.ID, nil, subject, err
	}
	id, ts, err = s.keepDerived(ctx, e, ks, x, ts, opts)
	return id, ts, nil, err
}

// lapseAllowance is how close to its expiry (as shipkey reckons it) a
// subject token may already have lapsed at the server: servers state exp in
// whole seconds, and expires_in counts from before the answer arrived.
const lapseAllowance = 5 * time.Second

// subjectLapsed says whether a refused exchange may have been refused only
// because its subject token ran out on the way: the server answered (not a
// network, timeout, TLS or configuration failure) and by now the subject is
// due for renewal, expired or within lapseAllowance of its expiry.
func subjectLapsed(err error, subject *auth.TokenSet, now time.Time) bool {
	var ae *auth.Error
	if subject == nil || !errors.As(err, &ae) {
		return false
	}
	switch ae.Kind {
	case auth.KindNetwork, auth.KindTimeout, auth.KindTLS, auth.KindConfig:
		return false
	}
	return !subject.Access().ValidFor(now, lapseAllowance)
}

// keepDerived caches ts, the token an exchange for x gave, with key e's
// secrets until it expires (not when its expiry is not stated, or the key
// was logged out meanwhile), and marks the key used when asked.
func (s *Store) keepDerived(ctx context.Context, e keyEntry, ks keyState, x auth.Exchange, ts *auth.TokenSet, opts ExchangeOptions) (string, *auth.TokenSet, error) {
	if !ts.Access().Stated() {
		return e.ID, ts, s.markUsedIf(ctx, e, ks, opts.MarkUsed)
	}
	err := s.changeState(ctx, e.ID, e.Label, func(ks *keyState) error {
		sec, err := s.getSecrets(e.Label, e.ID, *ks)
		if err != nil {
			return err
		}
		if sec.AccessToken == "" {
			return nil // logged out meanwhile: the session the token came from is over
		}
		sec.putDerived(x, ts, s.now())
		if opts.MarkUsed {
			ks.LastUsed = s.now()
		}
		return s.putSecrets(e.ID, ks, sec)
	})
	if err != nil {
		return e.ID, nil, err
	}
	return e.ID, ts, nil
}

// markUsedIf sets key e's Last Used when asked and not set recently.
func (s *Store) markUsedIf(ctx context.Context, e keyEntry, ks keyState, mark bool) error {
	if !mark || usedRecently(ks.LastUsed, s.now()) {
		return nil
	}
	return s.markUsedID(ctx, e)
}

// derived is the cached token for x when it is valid for minValid at now
// and not due; nil when there is none, it will not do, or its entry is
// damaged (not shipkey's JSON, another exchange's, or a token that fails
// the checks of a stored one).
func (k keySecrets) derived(x auth.Exchange, now time.Time, minValid time.Duration) *auth.TokenSet {
	raw, ok := k.Derived[x.CacheKey()]
	if !ok {
		return nil
	}
	var d derivedToken
	if json.Unmarshal(raw, &d) != nil || d.Exchange.CacheKey() != x.CacheKey() {
		return nil
	}
	ts := &d.Token
	if ts.AccessToken == "" || ts.CheckStored() != nil || !ts.Access().Stated() || !ts.Access().ValidFor(now, minValid) {
		return nil
	}
	return ts
}

// putDerived caches ts for x. The map is copied, never changed in place: a
// keySecrets value may share it with another (the memory backend keeps
// values). Expired and damaged entries go; past maxDerived, those that
// expire soonest.
func (k *keySecrets) putDerived(x auth.Exchange, ts *auth.TokenSet, now time.Time) {
	raw, err := json.Marshal(derivedToken{Exchange: x, Token: *ts})
	if err != nil {
		return
	}
	m := make(map[string]json.RawMessage, len(k.Derived)+1)
	expiry := map[string]time.Time{}
	for key, v := range k.Derived {
		var d derivedToken
		if json.Unmarshal(v, &d) != nil || d.Token.Access().Expired(now) || !d.Token.Access().Stated() {
			continue
		}
		m[key], expiry[key] = v, d.Token.AccessExpiry()
	}
	m[x.CacheKey()], expiry[x.CacheKey()] = raw, ts.AccessExpiry()
	if len(m) > maxDerived {
		keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return expiry[b].Compare(expiry[a]) })
		for _, key := range keys[maxDerived:] {
			if key != x.CacheKey() {
				delete(m, key)
			}
		}
	}
	k.Derived = m
}
