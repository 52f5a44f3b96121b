package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// keys show prints one key's definition and state, as text and as JSON,
// and never its token; a mistyped label gets "did you mean".
func TestKeysShowLocal(t *testing.T) {
	t.Parallel()
	st, _ := testStore(t, time.Now)
	openStore := func() (*store.Store, error) { return st, nil }
	ts, err := st.Current("demo")
	if err != nil {
		t.Fatal(err)
	}
	show := func(label string, asJSON bool) (string, error) {
		ios, out, _ := testIO("")
		err := keysShowRun(&keysShowOptions{IO: ios, Now: time.Now, Store: openStore, Label: label, JSON: asJSON})
		if strings.Contains(out.String(), ts.AccessToken) {
			t.Fatalf("keys show printed the access token:\n%s", out.String())
		}
		return out.String(), err
	}
	got, err := show("demo", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Key:           demo", "State:         ", "Grant:         password", "Definition:\n", "  client_id:           " + authtest.DemoClientID + "\n", "  auth_url:            http"} {
		if !strings.Contains(got, want) {
			t.Errorf("keys show lacks %q:\n%s", want, got)
		}
	}
	got, err = show("demo", true)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(got), &j); err != nil {
		t.Fatalf("keys show --json: %v\n%s", err, got)
	}
	if j["label"] != "demo" || j["client_id"] != authtest.DemoClientID || j["state"] == "" || j["usable"] != true || j["secrets"] != "memory" {
		t.Errorf("keys show --json = %v", j)
	}
	if _, ok := j["team"]; ok {
		t.Errorf("a key of this machine has a team: %v", j)
	}
	if _, err := show("dmeo", false); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "did you mean demo?") {
		t.Errorf("keys show dmeo: %v, want not found with did you mean", err)
	}
}

// keys show T/LABEL shows a team key as cached on this machine, through
// the same call as a key of this machine.
func TestKeysShowTeam(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 1)
	srv := authtest.NewServer(authtest.Config{
		Users:   []authtest.User{{Username: "svc", Password: "pw-show"}},
		Clients: []authtest.Client{{ID: "shipping-api", Secret: "cs-show"}},
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), patience(30*time.Second))
	defer cancel()
	ma, mb := etcdtest.TeamOfTwo(t, ctx, c, "show")
	if _, err := mb.Engine.CreateKey(ctx, "show", team.NewKey{Label: "k", Definition: store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: "shipping-api"}, Username: "svc"}, ClientSecret: "cs-show", Password: "pw-show"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ma.Engine.Keys(ctx, "show"); err != nil { // this machine's cache
		t.Fatal(err)
	}
	ios, out, _ := testIO("")
	opts := &keysShowOptions{IO: ios, Now: time.Now, Label: "show/k", JSON: true,
		Store: func() (*store.Store, error) { return ma.Store, nil },
		Team:  func() (team.Engine, error) { return ma.Engine, nil }}
	if err := keysShowRun(opts); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if j["label"] != "show/k" || j["team"] != "show" || j["secrets"] != "team" || j["client_id"] != "shipping-api" || j["username"] != "svc" {
		t.Errorf("keys show show/k --json = %v", j)
	}
	opts.Label, opts.JSON = "show/nosuch", false
	if err := keysShowRun(opts); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("keys show show/nosuch: %v, want not found", err)
	}
}
