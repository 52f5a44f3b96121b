package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// mintTo writes a fresh assertion of the realm's external issuer to path,
// as a CI system rewrites its identity token file, and returns it.
func (e *env) mintTo(path string, a authtest.Assertion) string {
	e.t.Helper()
	tok, err := e.srv.MintAssertion(a)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.secrets[tok] = true // an assertion is a credential: never stored
	e.mu.Unlock()
	return tok
}

func ciKey(e *env, d Definition) NewKey {
	d.Connection = auth.Connection{AuthURL: e.srv.URL(), ClientID: authtest.DemoCIClientID, ClientAuth: auth.ClientAssertion}
	d.Grant = auth.GrantJWTBearer
	return NewKey{Label: "ci", Definition: d}
}

// A jwt-bearer key keeps where its assertion is, never the assertion: it
// gets no refresh token, renews itself at expiry by a new grant that
// carries the file's new assertion (as the realm saw it), and a stale one
// is refused in one line that names the file, without ending the key.
func TestJWTBearerKeyRenewsFromTheRotatedFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "ci.jwt")
	first := e.mintTo(file, authtest.Assertion{})
	k, ts, err := s.Create(ctx, ciKey(e, Definition{AssertionFile: file, ClientAssertionFile: file}))
	if err != nil {
		t.Fatal(err)
	}
	e.remember(ts)
	if k.HasRefreshToken || k.AssertionFile != file || k.StatusAt(e.clk.Now()) != StatusValid {
		t.Fatalf("key %+v", k)
	}
	e.clk.Advance(6 * time.Minute)
	if got := mustKey(t, s, "ci").StatusAt(e.clk.Now()); got != StatusRenewsItself {
		t.Fatalf("expired jwt-bearer key: status %v, want %v", got, StatusRenewsItself)
	}
	second := e.mintTo(file, authtest.Assertion{})
	ts2 := e.token(s, "ci")
	e.remember(ts2)
	got := e.srv.Assertions()
	if ts2.AccessToken == ts.AccessToken || len(got) != 4 || got[1] != first || got[2] != second || got[3] != second {
		t.Fatalf("the renewal did not carry the rotated assertion (%d assertions seen)", len(got))
	}

	e.clk.Advance(6 * time.Minute)
	stale := e.mintTo(file, authtest.Assertion{TTL: -time.Minute})
	_, err = s.Token(ctx, "ci", TokenOptions{})
	if auth.KindOf(err) != auth.KindAssertionRefused || errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("stale assertion: %v (kind %v)", err, auth.KindOf(err))
	}
	msg := err.Error()
	if !strings.Contains(msg, "the client assertion from the file "+file+" has expired") || strings.Contains(msg, "\n") || strings.Contains(msg, stale) {
		t.Fatalf("stale assertion: %q", msg)
	}
	if got := mustKey(t, s, "ci").StatusAt(e.clk.Now()); got != StatusRenewsItself {
		t.Fatalf("after a stale assertion: status %v, want the key kept (%v)", got, StatusRenewsItself)
	}
	e.mintTo(file, authtest.Assertion{})
	e.remember(e.token(s, "ci"))
	e.check(s)
}

// The assertion may come from a command (argv split at spaces, no shell),
// run again at every renewal; one that fails is named with how it ended.
func TestJWTBearerKeyFromACommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "ci.jwt")
	script := filepath.Join(dir, "ci-token")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec cat \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.mintTo(file, authtest.Assertion{})
	_, ts, err := s.Create(ctx, ciKey(e, Definition{AssertionCmd: script + "  " + file, ClientAssertionCmd: script + " " + file}))
	if err != nil {
		t.Fatal(err)
	}
	e.remember(ts)
	e.clk.Advance(6 * time.Minute)
	rotated := e.mintTo(file, authtest.Assertion{})
	e.remember(e.token(s, "ci"))
	if got := e.srv.Assertions(); got[len(got)-1] != rotated {
		t.Fatal("the renewal did not run the command again")
	}
	e.clk.Advance(6 * time.Minute)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = s.Token(ctx, "ci", TokenOptions{})
	if auth.KindOf(err) != auth.KindConfig || !strings.Contains(err.Error(), "jwt-bearer: cannot read the assertion from the command ci-token: it exited with status 1") {
		t.Fatalf("failing command: %v", err)
	}
	e.check(s)
}

// A key must name the source its grant or client authentication needs,
// one of file and command, and none it does not.
func TestAssertionSourcesAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		nk   NewKey
		want string
	}{
		{ciKey(e, Definition{ClientAssertionFile: "x"}), "pass --assertion-file FILE or --assertion-cmd CMD"},
		{ciKey(e, Definition{AssertionFile: "x"}), "pass --client-assertion-file FILE or --client-assertion-cmd CMD"},
		{ciKey(e, Definition{AssertionFile: "x", AssertionCmd: "y", ClientAssertionFile: "x"}), "not both"},
		{NewKey{Label: "p", Definition: Definition{Connection: e.conn(), Username: "demo", AssertionFile: "x"}, ClientSecret: testClientSecret, Password: "p"},
			"--assertion-file FILE and --assertion-cmd CMD are for the jwt-bearer grant only"},
	} {
		before := e.srv.Count("token")
		if _, _, err := s.Create(ctx, tc.nk); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.nk.Definition, err, tc.want)
		}
		if e.srv.Count("token") != before {
			t.Errorf("%+v: a request was sent", tc.nk.Definition)
		}
	}
}
