package store

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// A field shipkey does not know in config.toml (a newer version's, a
// person's note) is written back as it was when shipkey rewrites the file:
// top-level values and tables, and the fields of a [[keys]] table, which
// stay with their key through a rename, a new key and a new default.
func TestUnknownConfigFieldsSurviveRewrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	e.create(s, "prod", false)
	e.create(s, "stage", false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(e.cfgDir, configFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["future_setting"] = "kept"
	doc["future_table"] = map[string]any{"level": int64(3), "names": []any{"a", "b"}}
	keys := doc["keys"].([]any)
	keys[0].(map[string]any)["future_field"] = "prod's note"
	keys[1].(map[string]any)["future_nested"] = map[string]any{"on": true}
	edited, err := toml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}

	s = e.open(Options{})
	if err := s.Rename("prod", "production"); err != nil {
		t.Fatal(err)
	}
	e.create(s, "dev", false)
	if err := s.SetDefault("stage"); err != nil {
		t.Fatal(err)
	}

	var got map[string]any
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := toml.Unmarshal(data, &got); err != nil {
		t.Fatalf("config.toml after the rewrites does not parse: %v\n%s", err, data)
	}
	if got["future_setting"] != "kept" || !reflect.DeepEqual(got["future_table"], doc["future_table"]) {
		t.Errorf("top-level unknown fields lost or changed:\n%s", data)
	}
	byLabel := map[string]map[string]any{}
	for _, k := range got["keys"].([]any) {
		m := k.(map[string]any)
		byLabel[m["label"].(string)] = m
	}
	if byLabel["production"]["future_field"] != "prod's note" {
		t.Errorf("the renamed key lost its unknown field:\n%s", data)
	}
	if !reflect.DeepEqual(byLabel["stage"]["future_nested"], map[string]any{"on": true}) {
		t.Errorf("stage lost its unknown table:\n%s", data)
	}
	if _, ok := byLabel["dev"]["future_field"]; ok || len(byLabel) != 3 {
		t.Errorf("an unknown field moved to another key:\n%s", data)
	}
	if got["default"] != "stage" {
		t.Errorf("default = %v, want stage", got["default"])
	}
	// The store still reads it as before.
	s2 := e.open(Options{})
	if k := mustKey(t, s2, "production"); k.Username != authtest.DemoUsername {
		t.Errorf("production after the rewrites: %+v", k)
	}
}

// A client that takes its secret only by HTTP Basic at the token endpoint,
// with a key that chose no method: the first request learns Basic, the key
// keeps it (client_auth = "client_secret_basic"), and a new process (a new
// auth client, which has learned nothing) renews with Basic at once.
func TestLearnedBasicAuthSurvivesReopen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *authtest.Config) {
		for i := range c.Clients {
			if c.Clients[i].ID == authtest.DemoClientID {
				c.Clients[i].TokenBasicOnly = true
			}
		}
	})
	s := e.open(Options{})
	k := e.create(s, "prod", false)
	if k.Connection.ClientAuth != auth.ClientSecretBasic {
		t.Fatalf("after create: client_auth %q, want client_secret_basic", k.Connection.ClientAuth)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(e.cfgDir, configFileName))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Keys []struct {
			ClientAuth string `toml:"client_auth"`
		} `toml:"keys"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil || len(doc.Keys) != 1 || doc.Keys[0].ClientAuth != "client_secret_basic" {
		t.Fatalf("config.toml keeps no client_auth = client_secret_basic (%v):\n%s", err, data)
	}

	fresh, err := auth.NewClient(auth.Options{Now: e.clk.Now, Timeout: 10 * time.Second, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s = e.open(Options{Auth: fresh})
	if got := mustKey(t, s, "prod").Connection.ClientAuth; got != auth.ClientSecretBasic {
		t.Fatalf("after reopening: client_auth %q, want client_secret_basic", got)
	}
	before := e.srv.Count("refresh_token")
	e.clk.Advance(10 * time.Minute) // past the 5-minute access token
	if _, err := s.Token(context.Background(), "prod", TokenOptions{}); err != nil {
		t.Fatalf("renewal after reopening: %v", err)
	}
	if n := e.srv.Count("refresh_token") - before; n != 1 {
		t.Errorf("the renewal took %d refresh requests, want 1 (Basic at once, no form body refused first)", n)
	}
	if got := fresh.LearnedClientAuth(e.conn()); got != "" {
		t.Errorf("the new auth client learned %q itself: the test shows nothing about the store", got)
	}
}
