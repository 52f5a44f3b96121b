package fleet

import (
	"context"
	"strings"
	"testing"
)

// TestTeamLogoutEndsSessionForEveryMachine: logout T/L on machine a ends the
// session once at the server and deletes the team's token set; machine b,
// which cached that token while it was valid, does not hand it out again:
// its next token gets new ones (the password is kept by the team), once for
// the team. Then login T/L on a gets tokens that b serves without a request.
func TestTeamLogoutEndsSessionForEveryMachine(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "bye")
	old := strings.TrimSpace(a.must(t, ctx, nil, "token", "bye/svc"))
	if got := strings.TrimSpace(b.must(t, ctx, nil, "token", "bye/svc")); got != old {
		t.Fatalf("before logout the machines hand out different tokens")
	}
	sessions, logouts, tokens := srv.Sessions(), srv.Count("logout"), srv.Count("token")
	if sessions == 0 {
		t.Fatal("the server holds no session before logout")
	}

	r := a.run(ctx, nil, "logout", "bye/svc")
	if r.code != 0 || !strings.Contains(r.stderr, "Logged out team key bye/svc for every member: ended the session at the server") {
		t.Fatalf("logout: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := srv.Count("logout") - logouts; n != 1 {
		t.Errorf("logout requests at the server: %d, want 1", n)
	}
	if n := srv.Sessions(); n != sessions-1 {
		t.Errorf("sessions at the server after logout: %d, want %d", n, sessions-1)
	}
	if strings.Contains(r.stdout+r.stderr, old) {
		t.Errorf("logout printed the token")
	}

	// b's cached token is still unexpired: it must not be handed out.
	nb := strings.TrimSpace(b.must(t, ctx, nil, "token", "bye/svc"))
	if nb == "" || nb == old {
		t.Fatalf("b after a's logout: token %q, want a new one", text(nb, old))
	}
	if na := strings.TrimSpace(a.must(t, ctx, nil, "token", "bye/svc")); na != nb {
		t.Errorf("a and b hand out different tokens after the logout")
	}
	if n := srv.Count("token") - tokens; n != 1 {
		t.Errorf("token requests after the logout: %d, want 1 for the team", n)
	}

	// A second logout ends the new session; login on a serves b.
	a.must(t, ctx, nil, "logout", "bye/svc")
	r = a.run(ctx, nil, "logout", "bye/svc")
	if r.code != 0 || !strings.Contains(r.stderr, "already logged out") {
		t.Errorf("logout again: exit %d, stderr %q", r.code, r.stderr)
	}
	r = a.run(ctx, nil, "login", "bye/svc")
	if r.code != 0 || !strings.Contains(r.stderr, "Logged in team key bye/svc for every member") {
		t.Fatalf("login: exit %d, stderr %q", r.code, r.stderr)
	}
	tokens = srv.Count("token")
	nl := strings.TrimSpace(a.must(t, ctx, nil, "token", "bye/svc"))
	if nl == nb || nl == old {
		t.Fatalf("after login a hands out an old token")
	}
	if got := strings.TrimSpace(b.must(t, ctx, nil, "token", "bye/svc")); got != nl {
		t.Errorf("b does not hand out the token a's login got")
	}
	if n := srv.Count("token") - tokens; n != 0 {
		t.Errorf("token requests after login: %d, want 0 (both machines reuse it)", n)
	}
}

// TestTeamLoginWrongPassword: a password given to login T/L that the server
// refuses changes nothing for the team: the kept password still renews.
func TestTeamLoginWrongPassword(t *testing.T) {
	t.Parallel()
	c := needCluster(t)
	srv := newRealm(t)
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	a, b := fleetTeam(t, ctx, c, srv, "wrongpw")
	r := a.run(ctx, []string{"SHIPKEY_PASSWORD=not-the-password"}, "login", "wrongpw/svc")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("login with a wrong password: exit %d, stderr %q; want one line and a failure", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "not-the-password") {
		t.Errorf("the password reached stderr")
	}
	a.must(t, ctx, nil, "logout", "wrongpw/svc")
	if tok := strings.TrimSpace(b.must(t, ctx, nil, "token", "wrongpw/svc")); tok == "" {
		t.Errorf("b: no token with the team's kept password")
	}

	// A password given to a team key whose grant takes none is refused in
	// one line, as for a local key, not silently dropped.
	a.must(t, ctx, []string{"SHIPKEY_CLIENT_SECRET=" + clientSecret},
		"keys", "new", "--team", "wrongpw", "--grant", "client-credentials", "--label", "cc", "--auth-url", srv.URL(), "--client-id", "shipping-api")
	r = a.run(ctx, nil, "login", "wrongpw/cc", "--password-stdin")
	if r.code != 2 || !strings.Contains(r.stderr, "--password-stdin is for the password grant; team key wrongpw/cc uses client-credentials") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("login --password-stdin on a client-credentials team key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// text shows which of two tokens a failure is about without printing either.
func text(got, old string) string {
	if got == old {
		return "<the old token>"
	}
	return "<empty>"
}
