package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// notIssuedHere is a revocation endpoint's refusal of the key's token that
// no retry changes (seen at a server that answers so to curl as well, with
// the secret sent either way).
var notIssuedHere = authtest.Fault{Endpoint: "revoke", Status: 400,
	Body: `{"error":"unauthorized_client","error_description":"token was not issued for this client"}`}

// A server that ends sessions only by revocation, and refuses for good to
// revoke the key's token: logout ends the key here anyway (tokens dropped,
// nothing pending), says in the server's words what was not ended, and
// does not send the person to check a client secret that works. A key left
// pending by such a server before is not blocked from logging in, and keys
// rm removes the key.
func TestLogoutRefusedForGoodEndsTheKeyHere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) { c.NoLogout, c.RevocationPath = true, "/revoke" })
	s := e.open(Options{})
	e.create(s, "k", false)
	e.create(s, "stuck", false)
	e.create(s, "r", false)

	e.srv.Inject(notIssuedHere)
	_, err := s.Logout(context.Background(), "k")
	var refused *EndRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Logout refused for good = %v, want an *EndRefusedError", err)
	}
	e.noSecretIn(err)
	line := err.Error()
	for _, want := range []string{"logged out here", "not ended at the server", "token was not issued for this client", "until its tokens expire"} {
		if !strings.Contains(line, want) {
			t.Errorf("the line does not say %q: %s", want, line)
		}
	}
	if strings.Contains(line, "client secret") || strings.Contains(line, "pending (") {
		t.Errorf("the line sends the person to the secret, or says the end is pending: %s", line)
	}
	// logout --help: a refusal exits 1, which cmd gives a KindServer below 500.
	if k := auth.KindOf(err); k != auth.KindServer {
		t.Errorf("kind %v, want %v (exit 1 for a refusal)", k, auth.KindServer)
	}
	if k := mustKey(t, s, "k"); !k.LoggedOut || !k.EndPending.IsZero() || k.Masked != "" {
		t.Fatalf("after a refusal for good the key is not logged out with nothing pending: %+v", k)
	}
	before := e.srv.Count("revoke")
	if _, err := s.Logout(context.Background(), "k"); err != nil || e.srv.Count("revoke") != before {
		t.Fatalf("a second logout: %v, %d more revocations (want none: nothing is pending)", err, e.srv.Count("revoke")-before)
	}
	if _, _, err := s.Login(context.Background(), "k", LoginOptions{Password: authtest.DemoPassword}); err != nil {
		t.Fatalf("login after a refusal for good: %v", err)
	}

	// A key left pending (the server could not be reached), then refused
	// for good: login goes ahead instead of waiting for an end that will
	// never come.
	e.srv.Inject(authtest.Fault{Endpoint: "revoke", Drop: true})
	if _, err := s.Logout(context.Background(), "stuck"); err == nil || errors.As(err, &refused) {
		t.Fatalf("Logout with the server unreachable = %v", err)
	}
	if k := mustKey(t, s, "stuck"); k.EndPending.IsZero() {
		t.Fatal("an unreachable server left no pending end")
	}
	e.srv.Inject(notIssuedHere)
	if _, _, err := s.Login(context.Background(), "stuck", LoginOptions{Password: authtest.DemoPassword}); err != nil {
		t.Fatalf("login of a pending key refused for good: %v", err)
	}

	e.srv.Inject(notIssuedHere)
	_, err = s.Remove(context.Background(), "r")
	var pending *EndPendingError
	if err == nil || errors.As(err, &pending) || !auth.IsFinalRefusal(err) {
		t.Fatalf("Remove refused for good = %v, want the refusal beside the removal", err)
	}
	if _, err := s.Key("r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the key refused for good was kept: %v", err)
	}
}
