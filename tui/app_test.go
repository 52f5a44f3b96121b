package tui

import (
	"bytes"
	"encoding/base64"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// openRealStore opens a throwaway store (memory secrets) against a fresh
// authtest demo realm.
func openRealStore(t *testing.T) (*store.Store, *auth.Client, *authtest.Server) {
	t.Helper()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	client, err := auth.NewClient(auth.Options{Timeout: 10 * time.Second, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(store.Options{ConfigDir: t.TempDir(), StateDir: t.TempDir(), Backend: "memory", Auth: client, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, client, srv
}

var osc52 = regexp.MustCompile(`\x1b\]52;c;([A-Za-z0-9+/=]*)(?:\x07|\x1b\\)`)

// TestWholeFlowAgainstRealStore types the credentials into a running
// program, gets a key from the authtest realm, sees its token details and
// copies the token, which must come out as OSC 52.
func TestWholeFlowAgainstRealStore(t *testing.T) {
	t.Parallel()
	st, client, srv := openRealStore(t)
	var (
		nativeMu sync.Mutex // the writer runs in a command's goroutine
		native   []string
	)
	m := New(Options{
		Store: st, Auth: client, Demo: true,
		Prefill: Prefill{AuthURL: srv.URL(), Realm: authtest.DemoRealm, ClientID: authtest.DemoClientID, Username: authtest.DemoUsername},
		Clipboard: func(s string) error {
			nativeMu.Lock()
			defer nativeMu.Unlock()
			native = append(native, s)
			return nil
		},
	})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	// Keep every byte of the output (teatest.WaitFor would consume it).
	var all bytes.Buffer
	drain := func() {
		buf := make([]byte, 32<<10)
		for {
			n, _ := tm.Output().Read(buf)
			if n == 0 {
				return
			}
			all.Write(buf[:n])
		}
	}
	waitFor := func(d time.Duration, cond func() bool) bool {
		for end := time.Now().Add(d); ; {
			drain()
			if cond() {
				return true
			}
			if time.Now().After(end) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !waitFor(5*time.Second, func() bool { return bytes.Contains(all.Bytes(), []byte("Client Secret")) }) {
		t.Fatalf("the Get API Key form did not show: %q", all.String())
	}

	// The form opened on its own (no keys) with focus on the client secret.
	tm.Type(authtest.DemoClientSecret)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	tm.Type(authtest.DemoPassword)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	tm.Type("demo")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})

	// Keys are ignored while the form is submitting; press c until the token
	// details (where c copies) are up and the OSC 52 sequence appears.
	var token string
	deadline := time.Now().Add(10 * time.Second)
	for token == "" && time.Now().Before(deadline) {
		tm.Send(tea.KeyPressMsg{Code: 'c', Text: "c"})
		waitFor(300*time.Millisecond, func() bool { return osc52.Match(all.Bytes()) })
		if mm := osc52.FindSubmatch(all.Bytes()); mm != nil {
			b, err := base64.StdEncoding.DecodeString(string(mm[1]))
			if err != nil {
				t.Fatalf("OSC 52 payload is not base64: %v", err)
			}
			token = string(b)
		}
	}
	if token == "" {
		t.Fatal("no OSC 52 clipboard sequence in the output")
	}
	dec, err := auth.Decode(token, time.Now())
	if err != nil || dec.Format != auth.FormatJWT || dec.Username != authtest.DemoUsername {
		t.Fatalf("copied text is not the demo user's JWT (err %v)", err)
	}

	// Copying marks the key used, in a command of its own that runs beside
	// the OSC 52 frame: wait for it (bounded) before quitting, as a person
	// sees the toast before pressing q.
	used := waitFor(5*time.Second, func() bool {
		k, err := st.Key("demo")
		return err == nil && !k.LastUsed.IsZero()
	})
	if !used {
		t.Fatal("copying did not mark the key used")
	}

	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	drain()
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if fm.active != screenDetails || fm.details.tokens == nil {
		t.Fatalf("final screen %v", fm.active)
	}
	if fm.details.tokens.AccessToken != token {
		t.Fatal("the copied token is not the one shown in the details")
	}
	nativeMu.Lock()
	got := slices.Clone(native)
	nativeMu.Unlock()
	if len(got) == 0 || got[0] != token {
		t.Fatal("the native clipboard writer did not get the token")
	}
	fm.quitting = false
	view := fm.View().Content
	for _, want := range []string{"Token details", "demo", "Bearer", "email profile", "Access expires", "Refresh expires", "[demo server]"} {
		if !strings.Contains(view, want) {
			t.Fatalf("details view lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(all.String(), authtest.DemoPassword) || strings.Contains(all.String(), authtest.DemoClientSecret) {
		t.Fatal("a secret reached the terminal output")
	}
}

// TestModelWithRealStore drives the model by hand (no program) against the
// real store: login failure focuses the password, then success, refresh,
// and the key list.
func TestModelWithRealStore(t *testing.T) {
	t.Parallel()
	st, client, srv := openRealStore(t)
	h := &harness{t: t, clock: &clock{t: time.Now()}}
	h.m = newModel(config{
		backend: st, verifier: client, now: h.clock.Now, theme: Theme{Plain: true},
		prefill: Prefill{AuthURL: srv.URL(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret,
			Username: authtest.DemoUsername, Password: "wrong-password", Label: "demo"},
		after: func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil },
	})
	h.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	h.run(h.m.Init())
	if h.m.active != screenForm {
		t.Fatalf("active %v, want the form", h.m.active)
	}
	h.press("enter")
	if h.m.form.focus != fieldPassword || h.m.form.errs[fieldPassword] == "" {
		t.Fatalf("wrong password: focus %s, error %q", formFields[h.m.form.focus].label, h.m.form.errs[fieldPassword])
	}
	h.mustNotShow("wrong-password", authtest.DemoClientSecret)
	h.press("ctrl+u")
	h.typeText(authtest.DemoPassword)
	h.press("enter")
	if h.m.active != screenDetails || h.m.details.tokens == nil {
		t.Fatalf("active %v after a good password (form error %q %q)", h.m.active, h.m.form.general, h.m.form.errs)
	}
	first := h.m.details.tokens.AccessToken
	h.press("r")
	if h.m.details.tokens.AccessToken == first || h.m.details.errMsg != "" {
		t.Fatalf("refresh did not bring a new token (%q)", h.m.details.errMsg)
	}
	h.mustShow("Server", "accepts this token (introspection)")
	h.press("i")
	h.mustShow("preferred_username", "demo", "Access token: JWT RS256 · signature verified · expires in")
	h.press("j", "j", "j")
	h.mustShow("shipper", "verified")
	h.press("2")
	h.mustShow("demo", notHandedOut)
	h.mustNotShow("never")
}
