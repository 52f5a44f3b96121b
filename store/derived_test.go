package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// jwtAud is the aud claim of a JWT, as a list, read without verifying.
func jwtAud(t *testing.T, token string) []string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	switch a := p.Aud.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// exchanged calls ExchangedToken and records the token it saw.
func (e *env) exchanged(s *Store, label string, x auth.Exchange) *auth.TokenSet {
	e.t.Helper()
	ts, err := s.ExchangedToken(context.Background(), label, x, ExchangeOptions{MarkUsed: true})
	if err != nil {
		e.t.Fatalf("ExchangedToken(%q): %v", label, err)
	}
	e.remember(ts)
	e.check(s)
	return ts
}

// A token for another audience comes by one exchange at the realm, is
// cached with the key's secrets (never in a plaintext file) until its
// expiry, and is exchanged again, from the key's current token, after it.
func TestExchangedTokenIsCachedUntilItsExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)
	x := auth.Exchange{Audience: authtest.DemoPublicClientID}

	first := e.exchanged(s, "prod", x)
	if aud := jwtAud(t, first.AccessToken); len(aud) != 1 || aud[0] != authtest.DemoPublicClientID {
		t.Fatalf("aud %v, want [%s]", aud, authtest.DemoPublicClientID)
	}
	own := e.token(s, "prod")
	if own.AccessToken == first.AccessToken {
		t.Fatal("the key's own token was handed out for the audience")
	}
	if n := e.srv.Count(auth.GrantTokenExchange); n != 1 {
		t.Fatalf("%d exchanges, want 1", n)
	}

	// Within its life, from this store and from another process's: no request.
	e.clk.Advance(2 * time.Minute)
	tokens := e.srv.Count("token")
	if again := e.exchanged(s, "prod", x); again.AccessToken != first.AccessToken {
		t.Error("a second call within the token's life exchanged again")
	}
	other := e.open(Options{})
	if again := e.exchanged(other, "prod", auth.Exchange{Audience: authtest.DemoPublicClientID, Scopes: nil}); again.AccessToken != first.AccessToken {
		t.Error("another process did not find the cached token")
	}
	if n := e.srv.Count("token"); n != tokens {
		t.Fatalf("%d token requests within the cached token's life, want none", n-tokens)
	}

	// Past its expiry (5 min): the key's token is renewed and exchanged again.
	e.clk.Advance(4 * time.Minute)
	renewed := e.exchanged(s, "prod", x)
	if renewed.AccessToken == first.AccessToken {
		t.Fatal("an expired derived token was handed out")
	}
	if n := e.srv.Count(auth.GrantTokenExchange); n != 2 {
		t.Fatalf("%d exchanges after expiry, want 2", n)
	}
	if n := e.srv.Count("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1 (the subject was due too)", n)
	}

	// Force: a new exchange although the cached one would do.
	forced, err := s.ExchangedToken(context.Background(), "prod", x, ExchangeOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	e.remember(forced)
	if forced.AccessToken == renewed.AccessToken || e.srv.Count(auth.GrantTokenExchange) != 3 {
		t.Error("--force-refresh did not exchange again")
	}
	e.check(s)
}

// Each audience (and resource, scope set) has its own entry; the order of
// the scopes does not matter.
func TestExchangedTokensPerAudience(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)
	a := e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoPublicClientID})
	b := e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoDPoPClientID})
	if a.AccessToken == b.AccessToken || jwtAud(t, b.AccessToken)[0] != authtest.DemoDPoPClientID {
		t.Fatal("two audiences shared a token")
	}
	e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoPublicClientID, Scopes: []string{"email", "profile"}})
	n := e.srv.Count(auth.GrantTokenExchange)
	e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoPublicClientID, Scopes: []string{"profile", "email"}})
	e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoDPoPClientID})
	if got := e.srv.Count(auth.GrantTokenExchange); got != n {
		t.Errorf("%d more exchanges for tokens already cached", got-n)
	}
}

// Derived tokens go with the key's session: logout drops them, and a key
// removed takes them along (its one secret record).
func TestExchangedTokensEndWithTheSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", true)
	x := auth.Exchange{Audience: authtest.DemoPublicClientID}
	first := e.exchanged(s, "prod", x)
	if _, err := s.Logout(context.Background(), "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExchangedToken(context.Background(), "prod", x, ExchangeOptions{}); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("after logout: %v, want login needed", err)
	}
	for _, raw := range e.keyringHeld(s) {
		if strings.Contains(raw, first.AccessToken) {
			t.Fatal("the derived token outlived the logout in the keyring")
		}
	}
	if _, _, err := s.Login(context.Background(), "prod", LoginOptions{}); err != nil {
		t.Fatal(err)
	}
	if again := e.exchanged(s, "prod", x); again.AccessToken == first.AccessToken {
		t.Fatal("a token of the ended session was handed out")
	}
	if _, err := s.Remove(context.Background(), "prod"); err != nil {
		t.Fatal(err)
	}
	if vs := e.keyringHeld(s); len(vs) != 0 {
		t.Fatalf("%d keyring records left after keys rm", len(vs))
	}
}

// A damaged cache entry is passed over: a new exchange replaces it, and the
// key's own secrets are untouched.
func TestDamagedExchangedTokenIsReplaced(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]string{
		"not json":        `"not a token"`,
		"control bytes":   `{"exchange":{"audience":"shipping-cli"},"token":{"access_token":"a\u001b[31mb","token_type":"Bearer","access_expires_at":"2999-01-01T00:00:00Z","obtained_at":"2026-03-01T12:00:00Z"}}`,
		"other exchange":  `{"exchange":{"audience":"someone-else"},"token":{"access_token":"abc","token_type":"Bearer","access_expires_at":"2999-01-01T00:00:00Z","obtained_at":"2026-03-01T12:00:00Z"}}`,
		"no expiry known": `{"exchange":{"audience":"shipping-cli"},"token":{"access_token":"abc","token_type":"Bearer","obtained_at":"2026-03-01T12:00:00Z"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			s := e.open(Options{})
			k := e.create(s, "prod", false)
			x := auth.Exchange{Audience: authtest.DemoPublicClientID}
			e.exchanged(s, "prod", x)
			kb := s.keyringBackendForTest()
			sec, _, err := kb.Get(k.ID)
			if err != nil {
				t.Fatal(err)
			}
			sec.Derived = map[string]json.RawMessage{x.CacheKey(): json.RawMessage(damage)}
			if err := kb.Set(k.ID, sec); err != nil {
				t.Fatal(err)
			}
			ts := e.exchanged(s, "prod", x)
			if jwtAud(t, ts.AccessToken)[0] != authtest.DemoPublicClientID {
				t.Fatal("the damaged entry was handed out")
			}
			if n := e.srv.Count(auth.GrantTokenExchange); n != 2 {
				t.Fatalf("%d exchanges, want 2 (the damaged entry replaced)", n)
			}
			e.token(s, "prod") // the key's own token still works
		})
	}
}

// A realm without token exchange: one line that says so, nothing stored.
func TestExchangeOnAServerWithoutIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.NoTokenExchange = true })
	s := e.open(Options{})
	e.create(s, "prod", false)
	_, err := s.ExchangedToken(context.Background(), "prod", auth.Exchange{Audience: authtest.DemoPublicClientID}, ExchangeOptions{})
	if auth.KindOf(err) != auth.KindGrantNotAllowed || !strings.Contains(err.Error(), "this server does not offer token exchange") {
		t.Fatalf("err = %v, want: this server does not offer token exchange", err)
	}
	e.noSecretIn(err)
	e.token(s, "prod")
}

// Many processes asking at once, with nothing cached: one exchange (the
// key's refresh lock serializes them; the others find the new token).
func TestConcurrentExchangesMakeOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)
	x := auth.Exchange{Audience: authtest.DemoPublicClientID}
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = e.open(Options{})
	}
	// The exchange answers slowly, so that every process has looked in the
	// cache (and found nothing) before the first one has stored its token.
	e.srv.Inject(authtest.Fault{Endpoint: "token", Delay: 300 * time.Millisecond})
	start := make(chan struct{})
	tokens := make(chan string, n)
	errs := make(chan error, n)
	for _, st := range stores {
		go func() {
			<-start
			ts, err := st.ExchangedToken(context.Background(), "prod", x, ExchangeOptions{})
			if err != nil {
				errs <- err
				return
			}
			tokens <- ts.AccessToken
		}()
	}
	close(start)
	var first string
	for range n {
		select {
		case err := <-errs:
			t.Fatal(err)
		case tok := <-tokens:
			if first == "" {
				first = tok
			} else if tok != first {
				t.Error("two processes got different derived tokens")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no answer in 30 s")
		}
	}
	if got := e.srv.Count(auth.GrantTokenExchange); got != 1 {
		t.Fatalf("%d exchanges for %d processes asking at once, want 1", got, n)
	}
}

// exchangedOnRetry exchanges label's token for DemoPublicClientID, on a
// realm that refuses the first subject: it checks that the token came from a
// second exchange, after one refresh.
func (e *env) exchangedOnRetry(s *Store, label string) {
	e.t.Helper()
	got := e.exchanged(s, label, auth.Exchange{Audience: authtest.DemoPublicClientID})
	if aud := jwtAud(e.t, got.AccessToken); len(aud) != 1 || aud[0] != authtest.DemoPublicClientID {
		e.t.Fatalf("aud %v, want [%s]", aud, authtest.DemoPublicClientID)
	}
	if n := e.srv.Count(auth.GrantTokenExchange); n != 2 {
		e.t.Errorf("%d exchanges, want 2 (the refused one, then one with the renewed subject)", n)
	}
	if n := e.srv.Count("refresh_token"); n != 1 {
		e.t.Errorf("%d refreshes, want 1", n)
	}
}

// A subject token that runs out while the exchange is on its way (a
// short-lived token on a slow link or a loaded machine) is refused by the
// server as not live; the key's token is then renewed and the exchange made
// once more. A refusal while the subject is still good (an unknown
// audience) is not retried.
func TestExchangeRenewsASubjectThatLapsedInTransit(t *testing.T) {
	t.Parallel()
	var transit atomic.Int64 // how far the clock moves while the next request is on its way
	var clk *clock
	e := newEnv(t, func(c *authtest.Config) {
		now := c.Now
		c.Now = func() time.Time {
			if d := transit.Swap(0); d != 0 {
				clk.Advance(time.Duration(d))
			}
			return now()
		}
	})
	clk = e.clk
	s := e.open(Options{})
	e.create(s, "prod", false)

	// 40 s left of 5 min: beyond the renewal margin (30 s), so Token hands
	// the stored token out as the subject; 45 s pass on the way.
	e.clk.Advance(4*time.Minute + 20*time.Second)
	transit.Store(int64(45 * time.Second))
	e.exchangedOnRetry(s, "prod")

	exchanges, refreshes := e.srv.Count(auth.GrantTokenExchange), e.srv.Count("refresh_token")
	_, err := s.ExchangedToken(context.Background(), "prod", auth.Exchange{Audience: "no-such-client"}, ExchangeOptions{})
	if err == nil || !strings.Contains(err.Error(), "Audience not found") {
		t.Fatalf("err = %v, want the server's Audience not found", err)
	}
	e.noSecretIn(err)
	if n := e.srv.Count(auth.GrantTokenExchange) - exchanges; n != 1 {
		t.Errorf("%d exchanges for an unknown audience, want 1 (no retry)", n)
	}
	if n := e.srv.Count("refresh_token") - refreshes; n != 0 {
		t.Errorf("%d refreshes for an unknown audience, want none", n)
	}
}

// A 2 s subject token that still looks valid to shipkey (1 s left, beyond
// its renewal margin) but that the server already let go (its clock reads
// exp in whole seconds, here 2.5 s ahead) is refused; the retry renews it
// although it looks valid, rather than sending the same dead token again.
func TestExchangeRenewsAShortSubjectTheServerLetGo(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64 // how far the server's clock is ahead of shipkey's
	e := newEnv(t, func(c *authtest.Config) {
		c.AccessTTL = 2 * time.Second
		now := c.Now
		c.Now = func() time.Time { return now().Add(time.Duration(ahead.Load())) }
	})
	s := e.open(Options{})
	e.create(s, "prod", false)
	e.clk.Advance(time.Second)
	ahead.Store(int64(2500 * time.Millisecond))
	e.exchangedOnRetry(s, "prod")
}
