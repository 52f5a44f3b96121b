package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth/authtest"
)

// rotatingSource is an assertion source whose assertion a test replaces,
// as a CI system rewrites its identity token file.
type rotatingSource struct {
	mu  sync.Mutex
	cur string
	err error
}

func (r *rotatingSource) set(a string) { r.mu.Lock(); r.cur = a; r.mu.Unlock() }

func (r *rotatingSource) source(from string) *AssertionSource {
	return &AssertionSource{From: from, Fetch: func(context.Context) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.cur, r.err
	}}
}

func mint(t *testing.T, s *authtest.Server, a authtest.Assertion) string {
	t.Helper()
	tok, err := s.MintAssertion(a)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ciRequest is a jwt-bearer request of the demo realm's CI client, which
// authenticates with the same external assertion (federated JWT).
func ciRequest(s *authtest.Server, grant, client *AssertionSource) Request {
	conn := Connection{AuthURL: s.URL(), Realm: s.Realm(), ClientID: authtest.DemoCIClientID, ClientAuth: ClientAssertion}
	return Request{Conn: conn, ClientAuth: ClientAuth{Method: ClientAssertion, Assertion: client}, Assertion: grant}
}

// The jwt-bearer grant gets tokens for an external assertion, read again at
// every run: after the source rotates, the next grant carries the new
// assertion (as the server saw it), as grant and as client authentication.
func TestJWTBearerGrantCarriesTheCurrentAssertion(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	var src rotatingSource
	first := mint(t, s, authtest.Assertion{})
	src.set(first)
	r := ciRequest(s, src.source("the file ci.jwt"), src.source("the file ci.jwt"))
	ts, err := c.Obtain(cliCtx(t), GrantJWTBearer, r)
	if err != nil {
		t.Fatal(err)
	}
	if ts.AccessToken == "" || ts.RefreshToken != "" {
		t.Fatalf("token set %+v: want an access token and no refresh token (Keycloak's grant issues none)", ts.Redacted())
	}
	if d, err := Decode(ts.AccessToken, clock.Now()); err != nil || d.Username != authtest.DemoUsername {
		t.Fatalf("the grant signed in as %v (%v), want the user linked to the subject, %q", d, err, authtest.DemoUsername)
	}
	clock.Advance(time.Minute)
	second := mint(t, s, authtest.Assertion{})
	src.set(second)
	if _, err := c.Obtain(cliCtx(t), GrantJWTBearer, r); err != nil {
		t.Fatal(err)
	}
	got := s.Assertions()
	if len(got) != 4 || got[0] != first || got[1] != first || got[2] != second || got[3] != second {
		t.Fatalf("the server received %d assertions; want the first twice (client and grant), then the second twice", len(got))
	}
}

// Each refusal of an external assertion is one line of
// KindAssertionRefused naming what was refused, where the assertion came
// from and what to do; the assertion never appears in it.
func TestExternalAssertionRefusalsSayWhat(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	stranger, err := authtest.NewExternalIssuer("https://ci.example.net")
	if err != nil {
		t.Fatal(err)
	}
	good := mint(t, s, authtest.Assertion{})
	untrusted, err := stranger.Mint(authtest.Assertion{Audience: []string{s.Issuer()}, Now: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		grant, client string
		kind          ErrorKind
		want          []string
	}{
		{"expired", mint(t, s, authtest.Assertion{TTL: -time.Minute}), good, KindAssertionRefused,
			[]string{"jwt-bearer: the assertion from the file grant.jwt has expired", "Token is not active", "put a current one there"}},
		{"untrusted issuer", untrusted, good, KindAssertionRefused,
			[]string{"does not trust the issuer of the assertion from the file grant.jwt", "Identity providers"}},
		{"audience", mint(t, s, authtest.Assertion{Audience: []string{"https://elsewhere.example"}}), good, KindAssertionRefused,
			[]string{"refused the audience (aud) of the assertion from the file grant.jwt", "aud = the realm's issuer URL"}},
		{"no user", mint(t, s, authtest.Assertion{Subject: "repo:someone/else"}), good, KindAssertionRefused,
			[]string{"knows no user for the subject (sub) of the assertion from the file grant.jwt"}},
		{"expired client assertion", good, mint(t, s, authtest.Assertion{TTL: -time.Minute}), KindAssertionRefused,
			[]string{"the client assertion from the command ci-token has expired", "put a current one there"}},
		{"untrusted client assertion", good, untrusted, KindAssertionRefused,
			[]string{"does not trust the issuer of the client assertion from the command ci-token"}},
		{"not a JWT", "hello", good, KindConfig,
			[]string{"the file grant.jwt did not give a JWT as the assertion"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var grant, client rotatingSource
			grant.set(tc.grant)
			client.set(tc.client)
			_, err := c.Obtain(cliCtx(t), GrantJWTBearer, ciRequest(s, grant.source("the file grant.jwt"), client.source("the command ci-token")))
			e := cliSafeErr(t, err, tc.kind, tc.grant, tc.client)
			msg := e.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s\nwant it to say %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, "<") {
				t.Errorf("not one filled-in line: %q", msg)
			}
			if about, client := AssertionFault(err); !about || client != strings.Contains(tc.name, "client") {
				t.Errorf("AssertionFault = %v, %v: want it about the %s assertion", about, client, map[bool]string{true: "client's", false: "grant's"}[strings.Contains(tc.name, "client")])
			}
		})
	}
}

// A key without a source, or whose source fails, is a config error naming
// the flags or the source, before anything is sent.
func TestAssertionSourceFailuresAreConfigErrors(t *testing.T) {
	t.Parallel()
	clock := &cliClock{}
	s := cliServer(t, clock, nil)
	c := cliNewClient(t, Options{Now: clock.Now})
	good := mint(t, s, authtest.Assertion{})
	var ok rotatingSource
	ok.set(good)
	before := s.Count("token")
	_, err := c.Obtain(cliCtx(t), GrantJWTBearer, ciRequest(s, nil, ok.source("x")))
	if e := cliSafeErr(t, err, KindConfig); !strings.Contains(e.Error(), "--assertion-file FILE or --assertion-cmd CMD") {
		t.Errorf("no source: %v", e)
	}
	_, err = c.Obtain(cliCtx(t), GrantJWTBearer, ciRequest(s, ok.source("x"), nil))
	if e := cliSafeErr(t, err, KindConfig); !strings.Contains(e.Error(), "--client-assertion-file FILE") {
		t.Errorf("no client source: %v", e)
	}
	if about, client := AssertionFault(err); !about || !client {
		t.Errorf("no client source: AssertionFault = %v, %v", about, client)
	}
	failing := rotatingSource{err: errors.New("exit status 3")}
	_, err = c.Obtain(cliCtx(t), GrantJWTBearer, ciRequest(s, failing.source("the command ci-token"), ok.source("x")))
	if e := cliSafeErr(t, err, KindConfig); !strings.Contains(e.Error(), "cannot read the assertion from the command ci-token: exit status 3") {
		t.Errorf("failing source: %v", e)
	}
	if n := s.Count("token") - before; n != 0 {
		t.Errorf("%d token requests were sent without an assertion", n)
	}
}
