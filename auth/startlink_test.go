package auth

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// noFollow is a client that reports a redirect instead of following it.
var noFollow = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// fetchStart GETs a start link without following it: the status and where
// it leads.
func fetchStart(t *testing.T, link string) (int, string) {
	t.Helper()
	resp, err := noFollow.Get(link)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// secretParams are the parts of a sign-in that must never be on a
// browser's command line.
var secretParams = []string{"state", "code_challenge", "nonce", "user_code", "request_uri"}

func checkBrowserURL(t *testing.T, p Prompt) {
	t.Helper()
	b := p.BrowserURL()
	if b != p.StartURL || !strings.HasPrefix(b, "http://127.0.0.1:") || !strings.Contains(b, "/start/") {
		t.Fatalf("BrowserURL %q is not the one-time start link (StartURL %q)", b, p.StartURL)
	}
	for _, s := range secretParams {
		if strings.Contains(b, s) {
			t.Errorf("BrowserURL %q carries %s", b, s)
		}
	}
}

// The browser is handed a one-time loopback link to the authorization URL;
// a second fetch of it (someone who read the browser's argv fetched it
// first) aborts the sign-in with one line, and nothing is obtained.
func TestAuthCodeStartLinkOnce(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	conn := cliConn(s)
	conn.Scopes = []string{"openid"}
	conn.NoPAR = true
	run := func(t *testing.T, r Request, prompt Prompter) (*TokenSet, error) {
		r.Conn, r.ClientAuth.Secret, r.Prompt, r.Wait = conn, authtest.DemoClientSecret, prompt, 20*time.Second
		return cliNewClient(t, Options{Now: clock.Now}).Obtain(cliCtx(t), GrantAuthCode, r)
	}
	t.Run("once: redirected to the authorization URL", func(t *testing.T) {
		t.Parallel()
		ts, err := run(t, Request{}, func(p Prompt) {
			checkBrowserURL(t, p)
			status, loc := fetchStart(t, p.StartURL)
			if status != http.StatusFound || loc != p.AuthURL {
				t.Errorf("start link: %d to %q, want 302 to the authorization URL", status, loc)
			}
			authorize(t, p, "approve", nil)
		})
		if err != nil || ts.AccessToken == "" {
			t.Fatalf("Obtain = %v", err)
		}
	})
	t.Run("twice: aborted", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, Request{}, func(p Prompt) {
			fetchStart(t, p.StartURL) // the other user
			if status, loc := fetchStart(t, p.StartURL); status != http.StatusBadRequest || loc != "" {
				t.Errorf("second fetch: %d to %q, want 400 and no redirect", status, loc)
			}
		})
		e := cliDemoSafe(t, err, KindAccessDenied)
		if !strings.Contains(e.Error(), "opened twice") || strings.Contains(e.Error(), "\n") {
			t.Fatalf("abort not said in one line: %q", e.Error())
		}
	})
}

// The device grant hands a browser a start link to the complete
// verification URI, never the URI with the user code; twice aborts.
func TestDeviceCodeStartLinkOnce(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	conn := cliConn(s)
	run := func(t *testing.T, prompt Prompter) (*TokenSet, error) {
		return cliNewClient(t, Options{Now: clock.Now}).Obtain(cliCtx(t), GrantDeviceCode, Request{Conn: conn, ClientAuth: ClientAuth{Secret: authtest.DemoClientSecret}, Prompt: prompt})
	}
	approve := func(t *testing.T, target string) {
		form := url.Values{"username": {authtest.DemoUsername}, "password": {authtest.DemoPassword}, "action": {"approve"}}
		go func() {
			if resp, err := http.PostForm(target, form); err == nil {
				resp.Body.Close()
			}
		}()
	}
	t.Run("once", func(t *testing.T) {
		t.Parallel()
		ts, err := run(t, func(p Prompt) {
			if p.VerificationURIComplete == "" {
				t.Error("the realm sent no complete verification URI")
				return
			}
			checkBrowserURL(t, p)
			status, loc := fetchStart(t, p.StartURL)
			if status != http.StatusFound || loc != p.VerificationURIComplete {
				t.Errorf("start link: %d to %q, want 302 to the complete verification URI", status, loc)
			}
			approve(t, loc)
		})
		if err != nil || ts.AccessToken == "" {
			t.Fatalf("Obtain = %v", err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, func(p Prompt) {
			go func() {
				fetchStart(t, p.StartURL)
				fetchStart(t, p.StartURL)
			}()
		})
		if e := cliDemoSafe(t, err, KindAccessDenied); !strings.Contains(e.Error(), "opened twice") {
			t.Fatalf("abort not said: %v", err)
		}
	})
}

// With a username asked for, a sign-in by anyone else is refused (and its
// session ended); the one asked for passes, and the authorization request
// names it as login_hint.
func TestInteractiveSignInMustBeTheUserAsked(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	conn := cliConn(s)
	conn.Scopes = []string{"openid"}
	conn.NoPAR = true
	run := func(t *testing.T, user string) (*TokenSet, Prompt, error) {
		var got Prompt
		ts, err := cliNewClient(t, Options{Now: clock.Now}).Obtain(cliCtx(t), GrantAuthCode, Request{
			Conn: conn, ClientAuth: ClientAuth{Secret: authtest.DemoClientSecret}, Username: user, Wait: 20 * time.Second,
			Prompt: func(p Prompt) { got = p; authorize(t, p, "approve", nil) },
		})
		return ts, got, err
	}
	ts, p, err := run(t, strings.ToUpper(authtest.DemoUsername))
	if err != nil {
		t.Fatalf("the user asked for (any case): %v", err)
	}
	if id := SignedInAs(ts, clock.Now()); !id.Is(authtest.DemoUsername) || id.Email.String() != "demo@example.com" {
		t.Fatalf("SignedInAs = %+v", id)
	}
	if u, _ := url.Parse(p.AuthURL); u.Query().Get("login_hint") != strings.ToUpper(authtest.DemoUsername) {
		t.Errorf("no login_hint in %s", p.AuthURL)
	}
	sessions := s.Sessions()
	_, _, err = run(t, "mallory")
	e := cliDemoSafe(t, err, KindAccessDenied)
	if !strings.Contains(e.Error(), "signed in as "+authtest.DemoUsername) || !strings.Contains(e.Error(), "not mallory") {
		t.Fatalf("mismatch not said: %v", err)
	}
	if got := s.Sessions(); got != sessions {
		t.Errorf("the refused sign-in's session is still open: %d sessions, want %d", got, sessions)
	}
}
