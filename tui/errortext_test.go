package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// loginErr is what a real auth client answers for a password login to conn.
func loginErr(t *testing.T, c *auth.Client, conn auth.Connection) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Login(ctx, conn, auth.ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err == nil {
		t.Fatal("the login succeeded")
	}
	return err
}

// In the app, errors name the form's fields where the command line names
// its flags: a realm that requires a scope and says nothing (the in-process
// realm, empty error bodies), and a timeout. A key that sends a scope gets
// no scope guess.
func TestFormErrorsNameFieldsNotFlags(t *testing.T) {
	t.Parallel()
	srv := authtest.NewServer(func() authtest.Config {
		c := authtest.DemoConfig()
		c.RequireScope, c.ErrorBodies = true, authtest.ErrorBodiesEmpty
		return c
	}())
	defer srv.Close()
	c, err := auth.NewClient(auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	noScope := loginErr(t, c, auth.Connection{AuthURL: srv.URL(), Realm: authtest.DemoRealm, ClientID: authtest.DemoClientID})
	if !strings.Contains(noScope.Error(), "--scope openid") || !strings.Contains(noScope.Error(), "--basic-auth") {
		t.Fatalf("the CLI's line lost its flags: %v", noScope)
	}
	p := demoPrefill
	p.Scope = ""
	h := newFormHarness(t, p, func(f *fakeStore) { f.createErr = noScope })
	h.send(windowSize(200, 40))
	h.press("enter")
	h.mustShow("the Scope field: openid", "Client auth: client_secret_basic")
	h.mustNotShow("--scope", "--basic-auth")

	// A request that had a scope: the refusal guesses no missing scope.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer hang.Close()
	scoped := loginErr(t, c, auth.Connection{TokenURL: hang.URL + "/token", ClientID: "shipping", Scopes: []string{"email"}})
	h2 := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.createErr = scoped })
	h2.send(windowSize(200, 40))
	h2.press("enter")
	h2.mustShow("Client auth: client_secret_basic")
	h2.mustNotShow("scope (", "Scope field", "--basic-auth")

	// A timeout names the setting, not the flag.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release) // before Close, which waits for the handler
	c.SetTimeout(50 * time.Millisecond)
	timedOut := loginErr(t, c, auth.Connection{TokenURL: slow.URL + "/token", ClientID: "shipping"})
	h3 := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.createErr = timedOut })
	h3.send(windowSize(200, 40))
	h3.press("enter")
	h3.mustShow("raise the timeout (or SHIPKEY_TIMEOUT")
	h3.mustNotShow("--timeout")
}

// Every setting an auth hint names has a form field (or a wording) in the
// app: no flag is left in what the app shows.
func TestFieldSettingNamesEveryHintFlag(t *testing.T) {
	t.Parallel()
	for flag, want := range map[string]string{
		"scope openid":        "the Scope field: openid",
		"basic-auth":          "Client auth: client_secret_basic under Advanced",
		"public-client":       "Client auth: none (public client) under Advanced",
		"client-auth":         "the Client auth field under Advanced",
		"grant device-code":   "Grant: device code",
		"dpop":                "DPoP on under Advanced",
		"par=false":           "PAR off under Advanced",
		"client-key FILE":     "the Client key file field under Advanced",
		"client-cert FILE":    "the Client cert file field under Advanced",
		"generate-client-key": "Generate key on under Advanced",
		"callback-port":       "the Callback port field under Advanced",
		"timeout":             "the timeout",
	} {
		e := &auth.Error{Msg: "m", Hint: "{{" + flag + "}}"}
		if got := auth.RenderError(e, fieldSetting); got != "m; "+want {
			t.Errorf("{{%s}} in the app: %q, want %q", flag, got, "m; "+want)
		}
		if strings.Contains(auth.RenderError(e, fieldSetting), "--") {
			t.Errorf("{{%s}} left a flag", flag)
		}
	}
}
