package tui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// t0 is the fixed clock of the model tests.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// clock is an injectable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeJWT builds an unsigned-looking JWT with the given claims.
func fakeJWT(header, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(claims) + "." + base64.RawURLEncoding.EncodeToString([]byte("not-a-real-signature"))
}

// fakeTokens is a token set like the demo server's: 5 min access, 30 min
// refresh.
func fakeTokens(now time.Time, user string, n int) *auth.TokenSet {
	access := fakeJWT(map[string]any{"alg": "RS256", "typ": "JWT", "kid": "key-1"}, map[string]any{
		"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(), "jti": fmt.Sprintf("jti-%d", n),
		"iss": "http://127.0.0.1:8080/auth/realms/master", "sub": "user-1", "typ": "Bearer", "azp": "shipping-api",
		"preferred_username": user, "scope": "email profile",
		"realm_access": map[string]any{"roles": []any{"offline_access", "uma_authorization"}},
	})
	refresh := fakeJWT(map[string]any{"alg": "HS512", "typ": "JWT"}, map[string]any{
		"exp": now.Add(30 * time.Minute).Unix(), "iat": now.Unix(), "typ": "Refresh", "n": n,
	})
	return &auth.TokenSet{
		AccessToken: access, TokenType: "Bearer", RefreshToken: refresh,
		ExpiresIn: 300, RefreshExpiresIn: 1800, NotBeforePolicy: new(int64), SessionState: "5f3c-session", Scope: "email profile",
		ObtainedAt: now, AccessExpiresAt: now.Add(5 * time.Minute), RefreshExpiresAt: now.Add(30 * time.Minute),
		JWTExpiresAt: now.Add(5 * time.Minute),
	}
}

// fakeStore is an in-memory Backend.
type fakeStore struct {
	hangCreate chan struct{}  // when set, Create hangs until its context ends (closed when it starts)
	removeEnd  auth.EndResult // what Remove says the server did
	signedInAs string         // the preferred_username of a new key's tokens when it names no user
	mu         sync.Mutex
	clock      *clock
	keys       map[string]store.Key
	tokens     map[string]*auth.TokenSet
	def        string
	settings   store.Settings
	n          int

	createErr, refreshErr, loginErr, logoutErr error
	lastNew                                    store.NewKey // what the last Create was given
	calls                                      []string

	// live answers Liveness (default: active, by introspection); liveErr
	// fails it.
	live    auth.Liveness
	liveErr error

	writes     int // bumps the stamp
	stampCalls int
	keysCalls  int

	// An interactive grant's Create tells nk.Prompt this prompt, then waits
	// for a verdict on approve (nil: approved, else the grant's error) or
	// for its context to end; created tells what it returned.
	prompt  auth.Prompt
	approve chan error
	created chan error

	requests *store.RequestHistory // the Request screen's history, in a test's folder
}

var _ Backend = (*fakeStore)(nil)

func newFakeStore(c *clock) *fakeStore {
	return &fakeStore{clock: c, keys: map[string]store.Key{}, tokens: map[string]*auth.TokenSet{},
		settings: store.Settings{ClipboardClear: 30 * time.Second, AutoRefresh: true},
		live:     auth.Liveness{State: auth.LiveActive, Via: text.Trusted("introspection")}}
}

func (f *fakeStore) Requests() *store.RequestHistory { return f.requests }

func (f *fakeStore) call(s string) { f.calls = append(f.calls, s) }

func (f *fakeStore) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// add puts a key with a fresh token set (obtained at the clock's now).
func (f *fakeStore) add(label, user string, lastUsed time.Time) store.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addLocked(label, user, lastUsed)
}

func (f *fakeStore) addLocked(label, user string, lastUsed time.Time) store.Key {
	f.n++
	f.writes++
	now := f.clock.Now()
	ts := fakeTokens(now, user, f.n)
	k := store.Key{ID: fmt.Sprintf("id-%d", f.n), Definition: store.Definition{Username: user, Connection: auth.Connection{AuthURL: "http://127.0.0.1:8080", Realm: "master", ClientID: "shipping-api"}}, Label: label, CreatedAt: now.Add(time.Duration(f.n) * time.Second), LastUsed: lastUsed, Token: ts.Redacted(), Masked: text.Mask(ts.AccessToken), HasRefreshToken: ts.RefreshToken != ""}
	if len(f.keys) == 0 {
		f.def = label
	}
	k.Default = f.def == label
	f.keys[label] = k
	f.tokens[label] = ts
	return k
}

func (f *fakeStore) Keys() ([]store.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keysCalls++
	out := make([]store.Key, 0, len(f.keys))
	for _, k := range f.keys {
		k.Default = k.Label == f.def
		out = append(out, k)
	}
	sortKeys(out)
	return out, nil
}

// EachKey walks Keys, as the store walks its index.
func (f *fakeStore) EachKey(fn func(store.Key) error) error {
	keys, err := f.Keys()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

func sortKeys(ks []store.Key) {
	slices.SortFunc(ks, func(a, b store.Key) int { return strings.Compare(a.Label, b.Label) })
}

func (f *fakeStore) Resolve(label string) (store.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if label == "" {
		label = f.def
	}
	k, ok := f.keys[label]
	if !ok {
		return store.Key{}, store.ErrNotFound
	}
	k.Default = k.Label == f.def
	return k, nil
}

func (f *fakeStore) Create(ctx context.Context, nk store.NewKey) (store.Key, *auth.TokenSet, error) {
	if f.hangCreate != nil {
		close(f.hangCreate) // the request has started
		<-ctx.Done()        // a server that never answers
		return store.Key{}, nil, ctx.Err()
	}
	if nk.GenerateClientKey && nk.OnClientKey != nil {
		// As the store does: the public key set goes to the person first.
		if err := nk.OnClientKey([]byte(testJWKS)); err != nil {
			return store.Key{}, nil, err
		}
	}
	if viewOf(nk.Grant).waits {
		err := f.askPerson(ctx, nk.Prompt)
		if f.created != nil {
			defer func() { f.created <- err }()
		}
		if err != nil {
			return store.Key{}, nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("create " + nk.Label)
	if f.createErr != nil {
		return store.Key{}, nil, f.createErr
	}
	if _, ok := f.keys[nk.Label]; ok {
		return store.Key{}, nil, store.ErrLabelTaken
	}
	f.lastNew = nk
	user := nk.Username
	if user == "" {
		user = f.signedInAs // who an interactive grant's tokens name
	}
	k := f.addLocked(nk.Label, user, time.Time{})
	k.Connection, k.Grant, k.CallbackPort = nk.Connection, nk.Grant, nk.CallbackPort
	f.keys[nk.Label] = k
	return k, f.copyTokens(nk.Label), nil
}

// copyTokens is a copy of label's token set (nil when it has none).
func (f *fakeStore) copyTokens(label string) *auth.TokenSet {
	ts, ok := f.tokens[label]
	if !ok {
		return nil
	}
	c := *ts
	return &c
}

func (f *fakeStore) renew(label string) (store.Key, *auth.TokenSet, error) {
	k, ok := f.keys[label]
	if !ok {
		return store.Key{}, nil, store.ErrNotFound
	}
	f.n++
	f.writes++
	ts := fakeTokens(f.clock.Now(), k.Username, f.n)
	k.Token, k.Masked, k.LoggedOut, k.HasRefreshToken = ts.Redacted(), text.Mask(ts.AccessToken), false, ts.RefreshToken != ""
	f.keys[label] = k
	f.tokens[label] = ts
	return k, f.copyTokens(label), nil
}

// askPerson is an interactive grant's wait: tell prompt what to do, then
// wait for the verdict on approve or for ctx to end.
func (f *fakeStore) askPerson(ctx context.Context, prompt auth.Prompter) error {
	if prompt == nil {
		return &auth.Error{Kind: auth.KindInteractionRequired, Msg: "no one to ask"}
	}
	prompt(f.prompt)
	select {
	case err := <-f.approve:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeStore) Login(ctx context.Context, label string, opts store.LoginOptions) (store.Key, *auth.TokenSet, error) {
	f.mu.Lock()
	k := f.keys[label]
	f.mu.Unlock()
	if viewOf(k.Grant).waits {
		if err := f.askPerson(ctx, opts.Prompt); err != nil {
			return store.Key{}, nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("login " + label)
	if f.loginErr != nil {
		return store.Key{}, nil, f.loginErr
	}
	return f.renew(label)
}

func (f *fakeStore) Refresh(_ context.Context, label string) (store.Key, *auth.TokenSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("refresh " + label)
	if f.refreshErr != nil {
		return store.Key{}, nil, f.refreshErr
	}
	return f.renew(label)
}

func (f *fakeStore) Current(label string) (*auth.TokenSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ts, ok := f.tokens[label]
	if !ok {
		return nil, store.ErrLoginNeeded
	}
	c := *ts
	return &c, nil
}

func (f *fakeStore) Liveness(_ context.Context, label string) (auth.Liveness, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("liveness " + label)
	if _, ok := f.tokens[label]; !ok {
		return auth.Liveness{}, store.ErrLoginNeeded
	}
	if f.liveErr != nil {
		return auth.Liveness{}, f.liveErr
	}
	return f.live, nil
}

func (f *fakeStore) MarkUsed(label string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.call("markused " + label)
	k := f.keys[label]
	k.LastUsed = f.clock.Now()
	f.keys[label] = k
	return nil
}

func (f *fakeStore) Logout(_ context.Context, label string) (auth.EndResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.call("logout " + label)
	k := f.keys[label]
	k.LoggedOut, k.Masked = true, ""
	f.keys[label] = k
	delete(f.tokens, label)
	return auth.EndResult{Via: "logout"}, f.logoutErr
}

func (f *fakeStore) Remove(_ context.Context, label string) (auth.EndResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.call("remove " + label)
	delete(f.keys, label)
	delete(f.tokens, label)
	return f.removeEnd, nil
}

func (f *fakeStore) Rename(label, newLabel string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.call("rename " + label + " " + newLabel)
	if _, ok := f.keys[newLabel]; ok {
		return store.ErrLabelTaken
	}
	k := f.keys[label]
	delete(f.keys, label)
	k.Label = newLabel
	f.keys[newLabel] = k
	f.tokens[newLabel] = f.tokens[label]
	delete(f.tokens, label)
	if f.def == label {
		f.def = newLabel
	}
	return nil
}

func (f *fakeStore) SetDefault(label string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.call("default " + label)
	f.def = label
	return nil
}

func (f *fakeStore) Connections() []auth.Connection {
	return []auth.Connection{{AuthURL: "http://127.0.0.1:8080", Realm: "master", ClientID: "shipping-api"}}
}

func (f *fakeStore) Settings() store.Settings { return f.settings }

// fakeVerifier answers every check with v.
type fakeVerifier struct{ v auth.Verification }

func (f fakeVerifier) Verify(context.Context, []auth.Connection, string) auth.Verification {
	return f.v
}

// harness drives a model without a terminal: it delivers messages, runs the
// commands they return (timers are recorded, not waited for; spinner frames
// are dropped), and records what was sent to the clipboard.
type harness struct {
	t         testing.TB
	m         *Model
	st        *fakeStore
	clock     *clock
	timers    []tea.Msg       // messages of the timers scheduled, in order
	delays    []time.Duration // the delays of the timers scheduled, in order
	clipboard []string        // OSC 52 writes (tea.SetClipboard)
	native    []string        // native clipboard writes
	nativeCur string
	nativeMu  sync.Mutex   // async mode writes the native clipboard from commands
	inbox     chan tea.Msg // async mode: what the commands report
	opened    []string     // browser opens: "envOnly url"
	openErr   error        // what opening a browser answers
}

func newHarness(t *testing.T, setup func(*fakeStore)) *harness {
	t.Helper()
	return newHarnessWith(t, setup, nil)
}

// newHarnessWith is newHarness with the config changed by edit first.
func newHarnessWith(t testing.TB, setup func(*fakeStore), edit func(*config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: &clock{t: t0}}
	h.st = newFakeStore(h.clock)
	h.st.requests = store.NewRequestHistory(filepath.Join(requestsDir(t), store.RequestsFile), h.clock.Now)
	if setup != nil {
		setup(h.st)
	}
	cfg := config{
		backend:  h.st,
		verifier: fakeVerifier{auth.Verification{State: auth.SigVerified, KeyID: text.Trusted("key-1")}},
		now:      h.clock.Now,
		theme:    Theme{Plain: true},
		clipWrite: func(s string) error {
			h.nativeMu.Lock()
			defer h.nativeMu.Unlock()
			h.native = append(h.native, s)
			h.nativeCur = s
			return nil
		},
		clipRead: func() (string, error) {
			h.nativeMu.Lock()
			defer h.nativeMu.Unlock()
			return h.nativeCur, nil
		},
		after: func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
			h.delays = append(h.delays, d)
			return func() tea.Msg { return timerMsg{fn(h.clock.Now())} }
		},
		grants: allGrants,
		openURL: func(url string, envOnly bool) error {
			h.nativeMu.Lock()
			defer h.nativeMu.Unlock()
			h.opened = append(h.opened, fmt.Sprint(envOnly, " ", url))
			return h.openErr
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	h.m = newModel(cfg)
	h.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	h.run(h.m.Init())
	return h
}

// allGrants is every grant the app has a row for, in the form's order.
var allGrants = []auth.GrantType{auth.GrantPassword, auth.GrantClientCredentials, auth.GrantDeviceCode, auth.GrantAuthCode, auth.GrantJWTBearer}

// timerMsg wraps the message of a timer so the harness can hold it back.
type timerMsg struct{ msg tea.Msg }

var setClipboardType = reflect.TypeOf(tea.SetClipboard("x")())

// send delivers msg and runs what it returns.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

// run executes cmd and delivers its messages, depth-first, bounded. In
// async mode (interactive grants, whose commands block while a person is
// asked), each command runs on its own goroutine as in a real program, and
// pump delivers what they report.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if h.inbox != nil {
		h.spawn(cmd)
		return
	}
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 500 {
			h.t.Fatal("too many commands: a loop?")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		queue = append(queue, h.deliver(c())...)
	}
}

// deliver handles one message a command reported and returns the commands
// it led to.
func (h *harness) deliver(msg tea.Msg) []tea.Cmd {
	h.t.Helper()
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		return msg
	case timerMsg:
		h.timers = append(h.timers, msg.msg)
	case spinner.TickMsg:
		// frames are not delivered: the spinner stays at frame 0
	default:
		if reflect.TypeOf(msg) == setClipboardType {
			h.clipboard = append(h.clipboard, reflect.ValueOf(msg).String())
			return nil
		}
		if reflect.TypeOf(msg).PkgPath() != reflect.TypeOf(keysLoadedMsg{}).PkgPath() {
			return nil // terminal requests (background colour, …)
		}
		_, next := h.m.Update(msg)
		return []tea.Cmd{next}
	}
	return nil
}

// async switches the harness to running commands on goroutines.
func (h *harness) async() { h.inbox = make(chan tea.Msg, 64) }

func (h *harness) spawn(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	inbox := h.inbox
	go func() { inbox <- cmd() }()
}

// pump delivers the messages of the commands in flight until cond holds;
// the bound is only a guard against a hang, never a measured time. cond is
// also checked between messages every few milliseconds: it may be made true
// by a command that sends nothing (a request that hangs once it started).
func (h *harness) pump(what string, cond func() bool) {
	h.t.Helper()
	guard := time.After(10 * time.Second)
	recheck := time.NewTicker(5 * time.Millisecond)
	defer recheck.Stop()
	for !cond() {
		select {
		case msg := <-h.inbox:
			for _, c := range h.deliver(msg) {
				h.spawn(c)
			}
		case <-recheck.C:
		case <-guard:
			h.t.Fatalf("waited in vain for %s; view:\n%s", what, h.view())
		}
	}
}

// fire delivers the pending timers of type T and forgets them.
func fire[T tea.Msg](h *harness) int {
	h.t.Helper()
	var keep, due []tea.Msg
	for _, m := range h.timers {
		if _, ok := m.(T); ok {
			due = append(due, m)
		} else {
			keep = append(keep, m)
		}
	}
	h.timers = keep
	for _, m := range due {
		h.send(m)
	}
	return len(due)
}

// press sends keys: "enter", "esc", "tab", "ctrl+c", or a single printable
// character.
func (h *harness) press(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

// typeText types s character by character.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+s":
		return tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl}
	case "ctrl+u":
		return tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	case "ctrl+o":
		return tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	case "ctrl+r":
		return tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl}
	case "ctrl+y":
		return tea.KeyPressMsg{Code: 'y', Mod: tea.ModCtrl}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "space", " ":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// view is the rendered screen.
func (h *harness) view() string { return h.m.View().Content }

func (h *harness) mustShow(subs ...string) {
	h.t.Helper()
	v := h.view()
	for _, s := range subs {
		if !strings.Contains(v, s) {
			h.t.Fatalf("view lacks %q:\n%s", s, v)
		}
	}
}

func (h *harness) mustNotShow(subs ...string) {
	h.t.Helper()
	v := h.view()
	for _, s := range subs {
		if strings.Contains(v, s) {
			h.t.Fatalf("view shows %q:\n%s", s, v)
		}
	}
}

func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

func lipglossWidth(s string) int { return lipgloss.Width(s) }

// ChangesSince says to read every key again, as a store does when it does
// not know what changed.
func (f *fakeStore) ChangesSince(store.Stamp) (store.Changes, error) {
	st, err := f.Stamp()
	return store.Changes{Stamp: st, All: true}, err
}

// Stamp changes with every write to the fake store.
func (f *fakeStore) Stamp() (store.Stamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stampCalls++
	return store.Stamp(fmt.Sprint(f.writes)), nil
}

// requestsDir is a directory for a harness's Request history, removed after
// the test as far as it can be: unlike t.TempDir, a history write still
// running when the test ends (a command the test did not wait for, such as
// the write after an answer) does not fail the test's cleanup.
func requestsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shipkey-tui-requests-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
