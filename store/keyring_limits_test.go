package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// limitedKeyring is the fake keyring with the checks go-keyring v0.2.8 makes
// before it writes on macOS (keyring_darwin.go: the `security -i` command
// line, the secret base64-encoded, at most 4,096 bytes) or Windows
// (keyring_windows.go: a credential blob of at most 2,560 bytes, a service
// under 512 bytes), refusing with go-keyring's ErrSetDataTooBig as they do.
type limitedKeyring struct {
	*fakeKeyring
	system  string // "darwin" or "windows"
	largest int    // the largest entry written, in the system's own measure
}

func (l *limitedKeyring) Set(service, user, secret string) error {
	var size int
	switch l.system {
	case "darwin":
		password := "go-keyring-base64:" + base64.StdEncoding.EncodeToString([]byte(secret))
		command := fmt.Sprintf("add-generic-password -U -s %s -a %s -w %s\n", shellQuote(service), shellQuote(user), shellQuote(password))
		if size = len(command); size > 4096 {
			return gokeyring.ErrSetDataTooBig
		}
	case "windows":
		if size = len(secret); size > 2560 {
			return gokeyring.ErrSetDataTooBig
		}
		if len(service) >= 512 || len(service) > 1024*30 {
			return gokeyring.ErrSetDataTooBig
		}
	}
	l.mu.Lock()
	l.largest = max(l.largest, size)
	l.mu.Unlock()
	return l.fakeKeyring.Set(service, user, secret)
}

// shellQuote is go-keyring's internal/shellescape.Quote.
func shellQuote(s string) string {
	if len(s) == 0 {
		return "''"
	}
	if regexp.MustCompile(`[^\w@%+=:,./-]`).MatchString(s) {
		return "'" + strings.ReplaceAll(s, "'", "'\"'\"'") + "'"
	}
	return s
}

// bigTokens gives the demo user enough realm roles that every access token
// is over 4 KiB, as real Keycloak tokens carrying roles and groups are.
func bigTokens(c *authtest.Config) {
	for i := range c.Users {
		for r := range 160 {
			c.Users[i].RealmRoles = append(c.Users[i].RealmRoles, fmt.Sprintf("shipping-role-%04d", r))
		}
	}
}

// TestKeyringWithinSystemLimits: a key whose tokens are over 4 KiB (and one
// exchanged token beside them) is created, renewed, exchanged and removed in
// a keyring that enforces macOS' and Windows' limits, and nothing the
// keyring holds comes near 1 KiB.
func TestKeyringWithinSystemLimits(t *testing.T) {
	t.Parallel()
	for _, system := range []string{"darwin", "windows"} {
		t.Run(system, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, bigTokens)
			kr := &limitedKeyring{fakeKeyring: e.kr, system: system}
			s := e.open(Options{Backend: BackendKeyring, Keyring: kr})
			e.create(s, "prod", true)
			ts := e.token(s, "prod")
			if len(ts.AccessToken) < 4096 {
				t.Fatalf("access token of %d bytes: the test needs one over 4 KiB", len(ts.AccessToken))
			}
			if _, _, err := s.Refresh(context.Background(), "prod"); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			e.exchanged(s, "prod", auth.Exchange{Audience: authtest.DemoPublicClientID})

			// A second process reads what the first wrote.
			s2 := e.open(Options{Backend: BackendKeyring, Keyring: kr})
			if got := e.token(s2, "prod"); got.AccessToken == "" {
				t.Fatal("no token from a second store")
			}
			if kr.largest == 0 || kr.largest >= 1024 {
				t.Fatalf("largest keyring entry %d bytes on %s, want under 1 KiB", kr.largest, system)
			}
			if _, err := s2.Remove(context.Background(), "prod"); err != nil {
				t.Fatal(err)
			}
			e.check(s2)
		})
	}
}

// setOldEntry writes a key's secrets as shipkey did before keyring.d: one
// JSON entry per key.
func setOldEntry(kr Keyring, id string, sec keySecrets) error {
	data, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	return kr.Set(keyringService, id, string(data))
}

// toOldLayout turns a keyring store into the layout of shipkey before
// keyring.d: one JSON entry per key in the keyring, no files, no store key.
func toOldLayout(t *testing.T, e *env, s *Store, labels ...string) map[string]keySecrets {
	t.Helper()
	kb := s.keyringBackendForTest()
	old := map[string]keySecrets{}
	for _, label := range labels {
		ent, _, err := s.find(label)
		if err != nil {
			t.Fatal(err)
		}
		sec, ok, err := kb.Get(ent.ID)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", label, ok, err)
		}
		if err := setOldEntry(e.kr, ent.ID, sec); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(kb.files().path(ent.ID)); err != nil {
			t.Fatal(err)
		}
		old[ent.ID] = sec
	}
	name, err := kb.entryName()
	if err != nil || name == "" {
		t.Fatalf("keyring.id: %q %v", name, err)
	}
	if err := e.kr.Delete(keyringService, name); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(kb.idPath()); err != nil {
		t.Fatal(err)
	}
	return old
}

// TestKeyringOldLayoutMigrates: a store of one JSON entry per key moves each
// key into its file the first time it is used, and the entry goes; a key
// first written, or removed, without being read loses its entry too.
// Nothing is lost, and no entry is left.
func TestKeyringOldLayoutMigrates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	for _, label := range []string{"read", "written", "removed"} {
		e.create(s, label, true)
	}
	old := toOldLayout(t, e, s, "read", "written", "removed")
	_ = s.Close()

	kr := &limitedKeyring{fakeKeyring: e.kr, system: "windows"}
	s2 := e.open(Options{Keyring: kr})
	kb := s2.keyringBackendForTest()
	ids := map[string]string{}
	for _, label := range []string{"read", "written", "removed"} {
		ent, _, err := s2.find(label)
		if err != nil {
			t.Fatal(err)
		}
		ids[label] = ent.ID
	}
	e.token(s2, "read")
	got, ok, err := kb.Get(ids["read"])
	if err != nil || !ok || got.ClientSecret != old[ids["read"]].ClientSecret || got.Password != authtest.DemoPassword || got.RefreshToken != old[ids["read"]].RefreshToken {
		t.Fatalf("migrated secrets differ: %v %v", ok, err)
	}
	changed := old[ids["written"]]
	changed.Password = "changed-password"
	if err := kb.Set(ids["written"], changed); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Remove(context.Background(), "removed"); err != nil {
		t.Fatal(err)
	}
	for label, id := range ids {
		if _, err := e.kr.Get(keyringService, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("key %s: its entry of the old layout is still in the keyring (%v)", label, err)
		}
		if fileExists(kb.markPath(id)) {
			t.Errorf("key %s: marker left", label)
		}
	}
	if got, _, err := kb.Get(ids["written"]); err != nil || got.Password != "changed-password" {
		t.Fatalf("written key: %v", err)
	}
	if vs := e.kr.values(); len(vs) != 1 || !strings.HasPrefix(vs[0], "AGE-SECRET-KEY-1") {
		t.Fatalf("the keyring holds %d entries, want the store key alone", len(vs))
	}
	e.check(s2)
}

// TestKeyringMigrationKilled: a kill at any instant of a key's move from its
// entry into its file leaves one of these states; each opens, hands out the
// key's token from its secrets, and ends with the file alone (no entry, no
// marker).
func TestKeyringMigrationKilled(t *testing.T) {
	t.Parallel()
	states := map[string]struct{ entry, marker, file bool }{
		"entry":             {entry: true},
		"entry+marker":      {entry: true, marker: true},
		"entry+marker+file": {entry: true, marker: true, file: true},
		"marker+file":       {marker: true, file: true},
		"file":              {file: true},
	}
	for name, st := range states {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			s := e.open(Options{})
			k := e.create(s, "prod", true)
			kb := s.keyringBackendForTest()
			sec, _, err := kb.Get(k.ID)
			if err != nil {
				t.Fatal(err)
			}
			file, err := os.ReadFile(kb.files().path(k.ID))
			if err != nil {
				t.Fatal(err)
			}
			name, _ := kb.entryName()
			key, _ := e.kr.Get(keyringService, name)
			toOldLayout(t, e, s, "prod")
			_ = s.Close()
			if st.file || st.marker {
				// A kill after the store key was made.
				if err := os.WriteFile(kb.idPath(), []byte(name+"\n"), filePerm); err != nil {
					t.Fatal(err)
				}
				if err := e.kr.Set(keyringService, name, key); err != nil {
					t.Fatal(err)
				}
			}
			if !st.entry {
				_ = e.kr.Delete(keyringService, k.ID)
			}
			if st.marker {
				if err := kb.mark(k.ID); err != nil {
					t.Fatal(err)
				}
			}
			if st.file {
				if err := os.WriteFile(kb.files().path(k.ID), file, filePerm); err != nil {
					t.Fatal(err)
				}
			}

			s2 := e.open(Options{})
			e.token(s2, "prod")
			got, ok, err := s2.keyringBackendForTest().Get(k.ID)
			if err != nil || !ok || got.ClientSecret != sec.ClientSecret || got.Password != sec.Password {
				t.Fatalf("secrets after the kill: %v %v", ok, err)
			}
			if _, err := e.kr.Get(keyringService, k.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("the entry of the old layout is left (%v)", err)
			}
			if fileExists(kb.markPath(k.ID)) {
				t.Error("the marker is left")
			}
			if !fileExists(kb.files().path(k.ID)) {
				t.Error("no file")
			}
		})
	}
}
