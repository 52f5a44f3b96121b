package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

const testJWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"

func TestRedactingHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	secrets := &secretSet{}
	secrets.Add("hunter2-secret", "")
	log := slog.New(newRedactingHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), secrets))

	log.Debug("request", "url", "http://127.0.0.1/token", "status", 200,
		"password", "hunter2-secret", "body", "x=1&client_secret=hunter2-secret", "token", testJWT,
		slog.Group("g", slog.String("inner", "Bearer "+testJWT)), "err", errors.New("bad "+testJWT))
	log.With("pre", "hunter2-secret").WithGroup("grp").Debug("token " + testJWT)

	out := buf.String()
	for _, leak := range []string{"hunter2-secret", "eyJ"} {
		if strings.Contains(out, leak) {
			t.Errorf("debug output leaks %q:\n%s", leak, out)
		}
	}
	for _, want := range []string{"url=http://127.0.0.1/token", "status=200", "password=[redacted]", "g.inner=[redacted]", "err=[redacted]", "pre=[redacted]", "msg=[redacted]"} {
		if !strings.Contains(out, want) {
			t.Errorf("debug output lacks %q:\n%s", want, out)
		}
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	loginNeeded := fmt.Errorf("key k: %w", store.ErrLoginNeeded)
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{usageErrorf("bad flag"), 2},
		{fmt.Errorf("wrapped: %w", usageErrorf("bad flag")), 2},
		{loginNeeded, 3},
		{&auth.Error{Kind: auth.KindLoginRequired, Msg: "session ended"}, 3},
		{&auth.Error{Kind: auth.KindInvalidCredentials, Msg: "wrong password"}, 5},
		{fmt.Errorf("key k: %w", &auth.Error{Kind: auth.KindInvalidClient, Msg: "client refused"}), 5},
		{&auth.Error{Kind: auth.KindCredentialsRefused, Status: 401}, 5},
		{&auth.Error{Kind: auth.KindNetwork, Msg: "connection refused"}, 6},
		{&auth.Error{Kind: auth.KindTimeout, Msg: "no answer"}, 6},
		{&auth.Error{Kind: auth.KindServer, Status: 503}, 6},
		{&auth.Error{Kind: auth.KindServer, Status: 404}, 1},
		{&auth.Error{Kind: auth.KindInvalidScope, Status: 400}, 1},
		{store.ErrNotFound, 1},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if got := errorLine(errors.New("a\nb\x1b[2J")).String(); got != `shipkey: a b\x1b[2J` {
		t.Errorf("errorLine = %q", got)
	}
}

func testIO(stdin string) (*iostreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &iostreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, &out, &errOut
}

func TestReadSecret(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SHIPKEY_PASSWORD": "from-env"}
	getenv := func(k string) string { return env[k] }
	src := secretSource{What: "password", Env: envPassword, Prompt: text.Trusted("Password: "), Hint: "set SHIPKEY_PASSWORD or pass --password-stdin"}

	ios, _, _ := testIO("")
	if s, err := readSecret(ios, getenv, src); err != nil || s != "from-env" {
		t.Errorf("env: %q, %v", s, err)
	}

	ios, _, _ = testIO("from-stdin\r\nsecond line\n")
	stdinSrc := src
	stdinSrc.FromStdin = true
	if s, err := readSecret(ios, getenv, stdinSrc); err != nil || s != "from-stdin" {
		t.Errorf("stdin wins over env: %q, %v", s, err)
	}

	ios, _, _ = testIO("")
	if _, err := readSecret(ios, getenv, stdinSrc); exitCode(err) != exitUsage {
		t.Errorf("empty stdin: %v", err)
	}

	ios, _, _ = testIO("")
	var asked string
	ios.ReadSecret = func(p text.Clean) (string, error) { asked = p.String(); return "from-prompt", nil }
	if s, err := readSecret(ios, func(string) string { return "" }, src); err != nil || s != "from-prompt" || asked != "Password: " {
		t.Errorf("prompt: %q, %v (asked %q)", s, err, asked)
	}

	ios, _, _ = testIO("")
	_, err := readSecret(ios, func(string) string { return "" }, src)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "SHIPKEY_PASSWORD") || !strings.Contains(err.Error(), "--password-stdin") {
		t.Errorf("no source: %v", err)
	}
}

// testStore opens a throwaway store (memory secrets) with one key created
// against an authtest realm.
func testStore(t *testing.T, now func() time.Time) (*store.Store, *authtest.Server) {
	t.Helper()
	srv := authtest.NewServer(authtest.DemoConfig())
	t.Cleanup(srv.Close)
	client, err := auth.NewClient(auth.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(store.Options{ConfigDir: t.TempDir(), StateDir: t.TempDir(), Backend: "memory",
		Auth: client, Now: now, Warn: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, _, err = st.Create(context.Background(), store.NewKey{Label: "demo", Definition: store.Definition{Connection: auth.Connection{AuthURL: srv.URL(), ClientID: authtest.DemoClientID}, Username: authtest.DemoUsername}, ClientSecret: authtest.DemoClientSecret, Password: authtest.DemoPassword})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv
}

func TestRunsWithoutCobra(t *testing.T) {
	t.Parallel()
	st, srv := testStore(t, time.Now)
	openStore := func() (*store.Store, error) { return st, nil }

	ios, out, _ := testIO("")
	if err := tokenRun(context.Background(), &tokenOptions{IO: ios, Now: time.Now, Store: openStore, Secrets: &secretSet{}}); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSuffix(out.String(), "\n")
	if !jwtPattern().MatchString(token) {
		t.Fatalf("token printed %q", out.String())
	}

	ios, out, _ = testIO("")
	if err := tokenRun(context.Background(), &tokenOptions{IO: ios, Now: time.Now, Store: openStore, Secrets: &secretSet{}, Header: true, Label: "demo"}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "Authorization: Bearer "+token+"\n" {
		t.Errorf("header printed %q", out.String())
	}

	// Last Used is set, the table masks the key.
	later := func() time.Time { return time.Now().Add(3 * time.Minute) }
	ios, out, _ = testIO("")
	if err := keysListRun(&keysListOptions{IO: ios, Store: openStore, Now: later}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "3 min ago") || !strings.Contains(s, "*") || strings.Contains(s, token) {
		t.Errorf("table:\n%s", s)
	}
	ios, out, _ = testIO("")
	if err := keysListRun(&keysListOptions{IO: ios, Store: openStore, Now: time.Now, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var keys []map[string]any
	if err := json.Unmarshal(out.Bytes(), &keys); err != nil || len(keys) != 1 {
		t.Fatalf("json %q: %v", out.String(), err)
	}
	for _, field := range []string{"label", "api_key", "last_used", "access_expires_at", "refresh_expires_at", "auth_url", "realm", "client_id", "username", "grant", "default", "status"} {
		if _, ok := keys[0][field]; !ok {
			t.Errorf("json lacks %q: %v", field, keys[0])
		}
	}

	// inspect of the key's token, then after the session ended.
	inspect := func(o *inspectOptions) (string, error) {
		t.Helper()
		ios, out, _ := testIO("")
		o.IO, o.Store, o.Now = ios, openStore, time.Now
		o.Auth = func() (*auth.Client, error) { return auth.NewClient(auth.Options{}) }
		err := inspectRun(context.Background(), o)
		return out.String(), err
	}
	if s, err := inspect(&inspectOptions{Verify: true}); err != nil || !strings.Contains(s, "preferred_username") || !strings.Contains(s, "Signature: verified") {
		t.Errorf("inspect: %v\n%s", err, s)
	}
	srv.EndSessions()
	// The report prints, then exit 1: the server no longer accepts the token.
	if s, err := inspect(&inspectOptions{}); !strings.Contains(s, "but the server no longer accepts it") || exitCode(err) != exitFailure {
		t.Errorf("inspect after EndSessions: %v\n%s", err, s)
	}

	// rm without a terminal needs --yes.
	ios, _, _ = testIO("")
	if err := keysRmRun(context.Background(), &keysRmOptions{IO: ios, Now: time.Now, Store: openStore, Label: "demo"}); exitCode(err) != exitUsage {
		t.Errorf("rm without --yes: %v", err)
	}
	ios, _, errOut := testIO("yes\n")
	ios.StdinTTY = true
	if err := keysRmRun(context.Background(), &keysRmOptions{IO: ios, Now: time.Now, Store: openStore, Label: "demo"}); err != nil || !strings.Contains(errOut.String(), "Removed") {
		t.Errorf("rm confirmed: %v %q", err, errOut.String())
	}
}

func TestRunWithUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"frobnicate"}, {"token", "--nope"}, {"keys", "rm"}, {}} {
		ios, out, errOut := testIO("")
		code := runWith(args, ios, func(string) string { return "" })
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "shipkey: ") {
			t.Errorf("%q: last stderr line %q", args, last)
		}
		if len(args) > 0 && (len(lines) != 1 || out.Len() != 0) {
			t.Errorf("%q: want exactly one stderr line and no stdout, got %q / %q", args, errOut.String(), out.String())
		}
	}
}

func TestFindSecretsCatchesLeaks(t *testing.T) {
	t.Parallel()
	r := &realm{password: "pw-leak", clientSecret: "cs-leak", passphrase: "pp-leak"}
	for name, content := range map[string]string{
		"password":      "x pw-leak y",
		"client secret": "cs-leak",
		"passphrase":    `{"p":"pp-leak"}`,
		"a JWT":         "token = " + testJWT,
		"captured":      "captured-opaque-token",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := findSecrets(r, []string{dir}, []string{"captured-opaque-token"}); err == nil {
			t.Errorf("%s in a file went unnoticed", name)
		}
	}
	clean := t.TempDir()
	if err := os.WriteFile(filepath.Join(clean, "f"), []byte("masked eyJhbG…AwXY3Q"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := findSecrets(r, []string{clean, filepath.Join(clean, "missing")}, nil); err != nil {
		t.Errorf("clean tree: %v", err)
	}
}

// A client clock five minutes behind the server's: inspect of the key's token
// says the clocks disagree instead of hiding it.
func TestInspectReportsClockSkew(t *testing.T) {
	t.Parallel()
	behind := func() time.Time { return time.Now().Add(-5 * time.Minute) }
	st, _ := testStore(t, behind)
	ios, out, _ := testIO("")
	o := &inspectOptions{IO: ios, Store: func() (*store.Store, error) { return st, nil }, Now: behind,
		Auth: func() (*auth.Client, error) { return auth.NewClient(auth.Options{}) }}
	if err := inspectRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// exp is whole seconds: the difference is five minutes give or take one.
	if s := out.String(); !regexp.MustCompile(`Clock: +exp and expires_in disagree by (4m59s|5m0s|5m1s)`).MatchString(s) {
		t.Fatalf("no skew line:\n%s", s)
	}
	// The token was issued five minutes ahead of this clock: iat says so.
	if s := out.String(); !regexp.MustCompile(`Clock: +iat lies [0-9][0-9dhms ]* in the future: the server's clock or this machine's is off`).MatchString(s) {
		t.Fatalf("no iat warning:\n%s", s)
	}

	synced, _ := testStore(t, time.Now)
	ios, out, _ = testIO("")
	o = &inspectOptions{IO: ios, Store: func() (*store.Store, error) { return synced, nil }, Now: time.Now,
		Auth: func() (*auth.Client, error) { return auth.NewClient(auth.Options{}) }}
	if err := inspectRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Clock:") {
		t.Fatalf("skew reported for synced clocks:\n%s", out.String())
	}
}

// TestHiddenLineEditing pins the hidden prompt's line editing: what each
// typed byte does to the line, and which keys end or abandon it.
func TestHiddenLineEditing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, typed, want string
		err               error
	}{
		{"enter ends", "secret\r", "secret", nil},
		{"newline ends", "secret\nmore", "secret", nil},
		{"backspace and delete", "sex\x7fc\x08cret\r", "secret", nil},
		{"backspace on empty", "\x7fs\r", "s", nil},
		{"ctrl+u clears", "wrong\x15secret\r", "secret", nil},
		{"arrows ignored", "se\x1b[Dcr\x1bOAet\r", "secret", nil},
		{"alt key ignored", "s\x1bxecret\r", "secret", nil},
		{"control bytes ignored", "se\x01\x02cret\r", "secret", nil},
		{"utf-8 whole", "pä\xe2\x82\xacss\r", "pä€ss", nil},
		{"invalid utf-8", "a\xffbcd\r", "a\ufffdbcd", nil},
		{"ctrl+c", "secret\x03", "", errInterrupted},
		{"ctrl+d on empty", "\x04", "", io.EOF},
		{"ctrl+d mid-line ignored", "se\x04cret\r", "secret", nil},
	} {
		var h hiddenLine
		var got string
		var err error
		for i := range len(tc.typed) {
			done, kerr := h.key(tc.typed[i])
			if kerr != nil {
				err = kerr
				break
			}
			if done {
				got = string(h.line)
				break
			}
		}
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: %q gives %q, %v; want %q, %v", tc.name, tc.typed, got, err, tc.want, tc.err)
		}
	}
}
