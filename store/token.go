package store

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/oauth2"

	"github.com/shipkey/shipkey/auth"
)

// mergeToken joins a key's token metadata with its secret tokens.
func mergeToken(meta auth.TokenSet, sec keySecrets) *auth.TokenSet {
	ts := meta
	ts.AccessToken, ts.RefreshToken, ts.IDToken = sec.AccessToken, sec.RefreshToken, sec.IDToken
	return &ts
}

// Token hands out the key's access token: the cached one while valid (with
// auth.ExpiryMargin), else a refreshed one (persisted), else a new login with
// the remembered password, else an error wrapping ErrLoginNeeded. At most one
// process refreshes a key at a time; the others wait and use its result. When
// markUsed, Last Used is set to now.
//
// The wait for another process's refresh is bounded by ctx. Network and
// server failures are returned as they are and leave the key untouched.
func (s *Store) Token(ctx context.Context, label string, markUsed bool) (*auth.TokenSet, error) {
	if _, err := s.prepare(); err != nil {
		return nil, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return nil, err
	}
	if exp := ks.Token.AccessExpiry(); !ks.LoggedOut && (exp.IsZero() || s.now().Add(auth.ExpiryMargin).Before(exp)) {
		// The metadata says the cached token may still be good: only then is
		// the secrets backend asked for it.
		sec, err := s.getSecrets(e.Label, e.ID, ks)
		if err != nil {
			return nil, err
		}
		if ts := mergeToken(ks.Token, sec); ts.AccessValid(s.now()) {
			if markUsed {
				if err := s.markUsedID(ctx, e); err != nil {
					return nil, err
				}
			}
			return ts, nil
		}
	}
	return s.renew(ctx, e, markUsed, false)
}

// Refresh forces a refresh now (the TUI's "refresh now"), persisting the
// result. When the refresh token is dead and no password is remembered, the
// error wraps ErrLoginNeeded; a still valid access token is kept then.
func (s *Store) Refresh(ctx context.Context, label string) (Key, error) {
	if _, err := s.prepare(); err != nil {
		return Key{}, err
	}
	e, _, err := s.find(label)
	if err != nil {
		return Key{}, err
	}
	if _, err := s.renew(ctx, e, false, true); err != nil {
		return Key{}, err
	}
	return s.keyByID(e.ID, label)
}

func (s *Store) markUsedID(ctx context.Context, e keyEntry) error {
	return s.update(context.WithoutCancel(ctx), func(cfg *configFile, st *stateFile) (dirty, error) {
		if _, ok := cfg.byID(e.ID); !ok {
			return 0, notFoundError(e.Label)
		}
		ks := st.Keys[e.ID]
		ks.LastUsed = s.now()
		st.Keys[e.ID] = ks
		return dirtyState, nil
	})
}

// renew takes the key's refresh lock, re-reads its state and secrets, and
// only then decides: use a token another process just got, refresh, or log
// in again with the remembered password.
func (s *Store) renew(ctx context.Context, e keyEntry, markUsed, force bool) (*auth.TokenSet, error) {
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
	cur := mergeToken(ks.Token, sec)
	if ks.LoggedOut {
		cur = &auth.TokenSet{}
	}
	now := s.now()
	if !force && cur.AccessValid(now) {
		if markUsed {
			if err := s.markUsedID(ctx, e); err != nil {
				return nil, err
			}
		}
		return cur, nil
	}

	var dead error // why only a login can help, as an auth error
	var why string
	switch {
	case cur.RefreshValid(now):
		ts, err := s.auth.Refresh(ctx, e.Connection, sec.ClientSecret, cur)
		if err == nil {
			if err := s.persist(ctx, e, ts, sec, markUsed); err != nil {
				return nil, err
			}
			return ts, nil
		}
		if !auth.IsLoginRequired(err) {
			return nil, err
		}
		dead, why = err, "the server refused the refresh token"
		var ae *auth.Error
		if errors.As(err, &ae) && ae.Description != "" {
			why += ": " + ae.Description
		}
	case ks.LoggedOut:
		why = "logged out"
	case cur.RefreshToken == "" && cur.AccessToken == "":
		why = "no token yet"
	case cur.RefreshToken == "":
		why = "the access token expired and there is no refresh token"
	default:
		why = fmt.Sprintf("the refresh token expired at %s", cur.RefreshExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if dead == nil {
		dead = &auth.Error{
			Kind: auth.KindLoginRequired,
			Op:   "refresh",
			Msg:  why,
			Hint: "log in again",
		}
	}

	if e.RememberPassword && sec.Password != "" {
		ts, err := s.auth.Login(ctx, e.Connection, sec.ClientSecret, e.Username, sec.Password)
		if err == nil {
			if err := s.persist(ctx, e, ts, sec, markUsed); err != nil {
				return nil, err
			}
			return ts, nil
		}
		switch auth.KindOf(err) {
		case auth.KindInvalidCredentials, auth.KindAccountDisabled, auth.KindAccountNotSetUp, auth.KindLoginRequired:
			dead, why = errors.Join(dead, err), "the remembered password was refused"
		default:
			return nil, err
		}
	}

	lne := &LoginNeededError{Label: e.Label, Why: why, Err: dead}
	if force && cur.AccessValid(now) {
		// The access token still works: keep it, only say a login is due.
		return nil, lne
	}
	if !ks.LoggedOut {
		err := s.update(context.WithoutCancel(ctx), func(cfg *configFile, st *stateFile) (dirty, error) {
			if _, ok := cfg.byID(e.ID); !ok {
				return 0, nil
			}
			k := st.Keys[e.ID]
			k.LoggedOut = true
			st.Keys[e.ID] = k
			return dirtyState, nil
		})
		if err != nil {
			return nil, errors.Join(lne, err)
		}
	}
	return nil, lne
}

// Current returns the key's stored token set (with secrets) without refreshing
// or marking use: for display and inspection. A key without a token (never
// logged in, logged out, or its session known ended) gives an error wrapping
// ErrLoginNeeded.
func (s *Store) Current(label string) (*auth.TokenSet, error) {
	if _, err := s.prepare(); err != nil {
		return nil, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return nil, err
	}
	if ks.LoggedOut {
		return nil, &LoginNeededError{Label: e.Label, Why: "logged out"}
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

// Liveness asks the server whether it still accepts the key's access token.
func (s *Store) Liveness(ctx context.Context, label string) (auth.Liveness, error) {
	if s.auth == nil {
		return auth.Liveness{}, errNoAuth
	}
	if _, err := s.prepare(); err != nil {
		return auth.Liveness{}, err
	}
	e, ks, err := s.find(label)
	if err != nil {
		return auth.Liveness{}, err
	}
	if ks.LoggedOut {
		return auth.Liveness{}, &LoginNeededError{Label: e.Label, Why: "logged out"}
	}
	sec, err := s.getSecrets(e.Label, e.ID, ks)
	if err != nil {
		return auth.Liveness{}, err
	}
	if sec.AccessToken == "" {
		return auth.Liveness{}, &LoginNeededError{Label: e.Label, Why: "no token yet"}
	}
	return s.auth.Liveness(ctx, e.Connection, sec.ClientSecret, sec.AccessToken), nil
}

// TokenSource returns an oauth2.TokenSource for the key: every token it
// hands out comes from Token (cached, refreshed and persisted by the store,
// so other processes see it), reused in memory until auth.ExpiryMargin
// before its expiry. ctx bounds the refreshes it triggers.
func (s *Store) TokenSource(ctx context.Context, label string) oauth2.TokenSource {
	return oauth2.ReuseTokenSourceWithExpiry(nil, &storeTokenSource{ctx: ctx, s: s, label: label}, auth.ExpiryMargin)
}

// storeTokenSource is the store's token source as an oauth2.TokenSource.
type storeTokenSource struct {
	ctx   context.Context
	s     *Store
	label string
}

func (ts *storeTokenSource) Token() (*oauth2.Token, error) {
	set, err := ts.s.Token(ts.ctx, ts.label, false)
	if err != nil {
		return nil, err
	}
	return set.OAuth2(), nil
}
