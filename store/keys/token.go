package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/team"
)

// TokenOptions say which token a key hands out.
type TokenOptions struct {
	// MinValid: renewed first unless valid this long.
	MinValid time.Duration
	// Force renews now, even when the token looks valid (one the server
	// revoked): by the refresh token or the key's grant. A key of this
	// machine only.
	Force bool
	// Exchange, when not zero, asks for a token for another audience,
	// exchanged with the key's own (cached until it expires). A key of this
	// machine only.
	Exchange auth.Exchange
	// MachineOnly, when set, refuses a team key with this message (exit 2
	// in the CLI).
	MachineOnly string
	// Local, when set, is called with a key of this machine before its
	// token is fetched; its error is returned.
	Local func(store.Key) error
	// Quiet: no warning when the token cannot stay valid for MinValid (the
	// caller says so its own way: the token socket's "warning").
	Quiet bool
	// HandOut, when set, records the token's hand-out in the audit trail
	// before it is returned (an error when the entry cannot be written);
	// nil: the caller hands nothing out, or records it itself (Record).
	HandOut *HandOut
}

// Token is a token a key handed out.
type Token struct {
	*auth.TokenSet
	// Name is the key as outputs name it: LABEL or T/LABEL.
	Name string
	// Key is the key of this machine that handed it out; zero for a team
	// key.
	Key store.Key
}

// Token hands out the token of the key label names (Address: label,
// SHIPKEY_KEY, the default, the only key), counted as a use of the key: a
// team key's renewed once for the whole team when due, a key of this
// machine's by the store's one lifecycle.
func (s *Service) Token(ctx context.Context, label string, o TokenOptions) (Token, error) {
	a := s.Address(label)
	if a.IsTeam() {
		switch {
		case o.MachineOnly != "":
			return Token{}, &UsageError{Msg: o.MachineOnly}
		case o.Force:
			return Token{}, usagef("--force-refresh takes a key of this machine; a team key is renewed for the whole team with: shipkey login %s", text.ShellQuote(a.Label))
		case !o.Exchange.IsZero():
			return Token{}, usagef("--audience takes a key of this machine; a team key %s hands out its own token only", text.ShellQuote(a.Label))
		}
		ts, err := s.teamToken(ctx, a, o.MinValid)
		if err == nil && o.HandOut != nil {
			if err = s.Record(a.Label, auth.Exchange{}, *o.HandOut, ts.AccessToken); err != nil {
				ts = nil
			}
		}
		return Token{TokenSet: ts, Name: a.Label}, err
	}
	key, err := s.resolveLocal(a.Label)
	if err != nil {
		return Token{}, err
	}
	if o.Local != nil {
		if err := o.Local(key); err != nil {
			return Token{}, err
		}
	}
	ts, err := s.KeyToken(ctx, key, o)
	return Token{TokenSet: ts, Name: key.Label, Key: key}, err
}

// KeyToken hands out the token of key, a key of this machine: exchanged
// (o.Exchange), renewed now (o.Force), else renewed first when it would not
// stay valid for o.MinValid. When even a fresh token cannot live that long
// (the server issues shorter ones), a warning says so, once per key and
// --min-valid on this machine, and the token is handed out anyway.
func (s *Service) KeyToken(ctx context.Context, key store.Key, o TokenOptions) (*auth.TokenSet, error) {
	var ts *auth.TokenSet
	var err error
	switch {
	case !o.Exchange.IsZero():
		ts, err = s.st.ExchangedToken(ctx, key.Label, o.Exchange, store.ExchangeOptions{MarkUsed: true, MinValid: o.MinValid, Force: o.Force})
	case o.Force:
		_, ts, err = s.st.Refresh(ctx, key.Label)
	default:
		ts, err = s.st.Token(ctx, key.Label, store.TokenOptions{MarkUsed: true, MinValid: o.MinValid})
	}
	if err != nil {
		return nil, err
	}
	s.tokens(ts)
	if o.HandOut != nil {
		if err := s.Record(key.Label, o.Exchange, *o.HandOut, ts.AccessToken); err != nil {
			return nil, err
		}
	}
	if o.Exchange.IsZero() && !o.Force && !o.Quiet && o.MinValid > 0 && !ts.Access().ValidFor(s.now(), o.MinValid) {
		s.shortLived(key, ts, o.MinValid)
	}
	return ts, nil
}

// shortLived warns, once per key and minValid, that the server's tokens
// live less than minValid.
func (s *Service) shortLived(key store.Key, ts *auth.TokenSet, minValid time.Duration) {
	// The life the server stated (expires_in) when it stated one: the JWT's
	// exp minus the moment the answer arrived is a second short whenever
	// the request took a while.
	life := time.Duration(ts.ExpiresIn) * time.Second
	if life <= 0 {
		life = ts.AccessExpiry().Sub(ts.ObtainedAt).Round(time.Second)
	}
	if !s.warnedOnce(fmt.Sprintf("min-valid\x00%s\x00%s", key.Label, minValid)) {
		text.NewWriter(s.warn).Linef("shipkey: warning: API key %s: this token is valid only until %s, less than --min-valid %s: the server issues shorter-lived tokens (%s), so every call renews it; pick --min-valid below their life (said once)",
			key.Shown(), text.Stamp(ts.AccessExpiry()), minValid, life)
	}
}

// warnedOnce reports whether the notice named by what was already given on
// this machine, and records that it now is: a marker file in the state
// directory's notices folder, named by a hash of what. Where no marker can
// be written it reports false (the notice is given again).
func (s *Service) warnedOnce(what string) bool {
	sum := sha256.Sum256([]byte(what))
	dir := filepath.Join(s.st.StateDir(), "notices")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:12])), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return errors.Is(err, fs.ErrExist)
	}
	_ = f.Close()
	return false
}

// teamToken hands out a team key's token. A program without the engine
// (cmd/shipkey) serves a cached token etcd still holds itself, over etcd's
// JSON gateway (team.CachedFast): no second process and no gRPC start-up
// for the common case. Anything else goes to the engine.
func (s *Service) teamToken(ctx context.Context, a Address, minValid time.Duration) (*auth.TokenSet, error) {
	if !s.EngineLinked() {
		if ts, ok := team.CachedFast(ctx, s.st, a.Team, a.TeamLabel, minValid, s.now()); ok {
			s.tokens(ts)
			return ts, nil
		}
	}
	eng, err := s.Engine()
	if err != nil {
		return nil, err
	}
	ts, err := eng.Token(ctx, a.Team, a.TeamLabel, team.TokenOptions{MinValid: minValid})
	if err != nil {
		return nil, err
	}
	s.tokens(ts)
	return ts, nil
}

// DPoP is the key's DPoP proof signer when its tokens are DPoP-bound, nil
// otherwise (the secrets are not read for a key without one).
func (s *Service) DPoP(key store.Key) (*auth.DPoPKey, error) {
	if !key.Connection.DPoP {
		return nil, nil
	}
	return s.st.DPoPKey(key.Label)
}

// ClientOptions shape the HTTP client of a key.
type ClientOptions struct {
	// Exchange, when not zero, sends a token for another audience
	// (exchanged with the key's own) instead of the key's own.
	Exchange auth.Exchange
	// ForceFirst renews the token before the first request.
	ForceFirst bool
	// AllowHosts are hosts (or host:port) other than the key's API URL's
	// that the client may send the token to (hosts.go).
	AllowHosts []string
	// Renewed, when set, is told of each forced renewal (the API refused
	// the token as invalid).
	Renewed func()
	// HandOut, when set, records each token the client sends in the audit
	// trail: once per token (a renewed one is another hand-out), not per
	// request.
	HandOut *HandOut
}

// Source hands out key's token to an API client: the stored one (renewed
// first when due) or, with o.Exchange, the exchanged one; renewed when
// forced (first with o.ForceFirst, and after an invalid-token 401).
func (s *Service) Source(key store.Key, o ClientOptions) auth.APISource {
	forceFirst := o.ForceFirst
	var mu sync.Mutex
	recorded := "" // the fingerprint of the token last recorded
	return func(ctx context.Context, force bool) (*auth.TokenSet, error) {
		mu.Lock()
		f := force || forceFirst
		forceFirst = false
		mu.Unlock()
		if force && o.Renewed != nil {
			o.Renewed()
		}
		ts, err := s.KeyToken(ctx, key, TokenOptions{Force: f, Exchange: o.Exchange})
		if err != nil || o.HandOut == nil {
			return ts, err
		}
		mu.Lock()
		defer mu.Unlock()
		if fp := audit.Fingerprint(ts.AccessToken); fp != recorded {
			if err := s.Record(key.Label, o.Exchange, *o.HandOut, ts.AccessToken); err != nil {
				return nil, err
			}
			recorded = fp
		}
		return ts, nil
	}
}

// Client is the HTTP client that sends key's token (Source), with a DPoP
// proof per request when the key has a DPoP key: the one path of shipkey
// api, the token socket's callers and the app's Request screen.
func (s *Service) Client(key store.Key, o ClientOptions) (*http.Client, error) {
	if s.client == nil {
		return nil, errors.New("no HTTP client for API calls in this program")
	}
	dpop, err := s.DPoP(key)
	if err != nil {
		return nil, err
	}
	if dpop != nil && o.HandOut != nil && o.HandOut.What == audit.Header {
		h := *o.HandOut
		h.What = audit.Proof // each request carries a proof with the token
		o.HandOut = &h
	}
	c, err := s.client(s.Source(key, o), dpop)
	if err != nil {
		return nil, err
	}
	return guardHosts(c, key, o.AllowHosts), nil
}
