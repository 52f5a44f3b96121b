package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// handedOut remembers, in a process that follows the session
// (FollowSession), the last token the Store handed out for each key and
// exchange, so that while the session is locked the Store can hand it out
// again: reading the stored token needs the secrets, handing out one this
// process already holds does not. Only the access token and its metadata
// are kept (never a refresh token, an ID token or a secret of the key), in
// memory only, and one is handed out only while it is valid for what is
// asked by the lifecycle's rule (auth.Expiry.ValidFor): when it would be
// renewed, the caller gets ErrSessionLocked.
type handedOut struct {
	mu     sync.Mutex
	on     bool
	tokens map[handedOutKey]auth.TokenSet
}

// handedOutKey is a key's id and an exchange's cache key ("" for the key's
// own token).
type handedOutKey struct{ id, exchange string }

func (h *handedOut) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = true
	if h.tokens == nil {
		h.tokens = map[handedOutKey]auth.TokenSet{}
	}
}

// keep remembers ts as handed out for k (when on).
func (h *handedOut) keep(k handedOutKey, ts *auth.TokenSet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on || ts == nil || ts.AccessToken == "" {
		return
	}
	held := *ts
	held.RefreshToken, held.IDToken = "", ""
	h.tokens[k] = held
}

// valid returns the token held for k when it is valid at now for minValid,
// and forgets one that is not.
func (h *handedOut) valid(k handedOutKey, now time.Time, minValid time.Duration) (*auth.TokenSet, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ts, ok := h.tokens[k]
	if !ok {
		return nil, false
	}
	if !ts.Access().ValidFor(now, minValid) {
		if !ts.Access().ValidFor(now, 0) {
			delete(h.tokens, k)
		}
		return nil, false
	}
	return &ts, true
}

// handOut finishes a Token or ExchangedToken call for label (x: the
// exchange's cache key, "" for the key's own token): a token handed out is
// remembered; a failure because the session is locked is answered with the
// token remembered, when it will do and the key is still there and not
// logged out.
func (s *Store) handOut(ctx context.Context, label, x string, minValid time.Duration, markUsed bool, id string, ts *auth.TokenSet, err error) (*auth.TokenSet, error) {
	if err == nil {
		if id != "" {
			s.handedOut.keep(handedOutKey{id, x}, ts)
		}
		return ts, nil
	}
	if !errors.Is(err, ErrSessionLocked) {
		return ts, err
	}
	e, ks, ferr := s.find(label)
	if ferr != nil || ks.LoggedOut {
		return nil, err
	}
	held, ok := s.handedOut.valid(handedOutKey{e.ID, x}, s.now(), minValid)
	if !ok {
		return nil, err
	}
	_ = s.markUsedIf(ctx, e, ks, markUsed) // Last Used is advisory; the token is good
	return held, nil
}
