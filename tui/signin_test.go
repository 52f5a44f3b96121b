package tui

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/browser"
	"github.com/shipkey/shipkey/store"
)

var (
	devicePrompt = auth.Prompt{
		Grant: auth.GrantDeviceCode, UserCode: "BCDF-GHJK",
		VerificationURI:         "http://127.0.0.1:8080/auth/realms/master/device",
		VerificationURIComplete: "http://127.0.0.1:8080/auth/realms/master/device?user_code=BCDF-GHJK",
		ExpiresAt:               t0.Add(10 * time.Minute), Interval: 5 * time.Second,
		StartURL: "http://127.0.0.1:43118/start/Xk2f9",
	}
	browserPrompt = auth.Prompt{
		Grant:       auth.GrantAuthCode,
		AuthURL:     "http://127.0.0.1:8080/auth/realms/master/protocol/openid-connect/auth?client_id=shipping-api&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&redirect_uri=http%3A%2F%2F127.0.0.1%3A43117%2Fcallback&response_type=code&state=af0ifjsldkj",
		RedirectURI: "http://127.0.0.1:43117/callback",
		StartURL:    "http://127.0.0.1:43117/start/Xk2f9",
		ExpiresAt:   t0.Add(5 * time.Minute),
	}
)

// The grant field offers every grant; each shows only its own fields.
func TestFormShowsOnlyTheGrantsFields(t *testing.T) {
	t.Parallel()
	want := map[auth.GrantType][]int{
		auth.GrantPassword:          {fieldClientSecret, fieldUsername, fieldPassword},
		auth.GrantClientCredentials: {fieldClientSecret},
		auth.GrantDeviceCode:        {fieldClientSecret},
		auth.GrantAuthCode:          {fieldClientSecret, fieldCallbackPort, fieldPAR},
		auth.GrantJWTBearer:         {fieldClientSecret, fieldAssertionFile},
	}
	optional := []int{fieldClientSecret, fieldUsername, fieldPassword, fieldCallbackPort, fieldPAR, fieldAssertionFile, fieldClientAssertionFile}
	h := newFormHarness(t, Prefill{}, nil)
	h.m.form.on[fieldAdvanced] = true
	for h.m.form.focus != fieldGrant {
		h.press("shift+tab")
	}
	for i, g := range allGrants {
		if i > 0 {
			h.press("right")
		}
		if got := h.m.form.grantType(); got != g {
			t.Fatalf("after %d × →: grant %q, want %q", i, got, g)
		}
		for _, f := range optional {
			if got, w := h.m.form.shown(f), slices.Contains(want[g], f); got != w {
				t.Errorf("%s: %s shown = %v, want %v", g, formFields[f].label, got, w)
			}
		}
		// A public client ("none") is offered where the grant can be one.
		if got := slices.Contains(formFields[fieldClientAuth].options(h.m.form), string(auth.ClientAuthNone)); got != viewOf(g).public {
			t.Errorf("%s: client auth none offered = %v", g, got)
		}
		h.mustShow(viewOf(g).title, viewOf(g).about)
	}
	h.press("right")
	if h.m.form.grantType() != auth.GrantPassword {
		t.Fatal("→ after the last grant must come back to the first")
	}
	h.press("left")
	if h.m.form.grantType() != allGrants[len(allGrants)-1] {
		t.Fatal("← goes back")
	}
	// A public client hides the secret.
	h.m.form.choice[fieldClientAuth] = string(auth.ClientAuthNone)
	if h.m.form.shown(fieldClientSecret) {
		t.Fatal("a public client shows the secret field")
	}
}

// Validation follows the grant: client credentials asks no user; a public
// client no secret; the callback port must be a port.
func TestFormValidationPerGrant(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "ci", Label: "ci", Grant: auth.GrantClientCredentials}, nil)
	h.press("ctrl+s")
	f := h.m.form
	if f.errs[fieldClientSecret] != "required" || f.errs[fieldUsername] != "" || f.errs[fieldPassword] != "" {
		t.Fatalf("client credentials: errs %q", f.errs)
	}
	h.mustNotShow("Username", "Password")
	golden.RequireEqual(t, []byte(h.view()))

	h2 := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "cli", Label: "cli", Grant: auth.GrantAuthCode,
		PublicClient: true, CallbackPort: 70000}, nil)
	h2.press("ctrl+s")
	f = h2.m.form
	if f.errs[fieldClientSecret] != "" {
		t.Fatalf("a public client's secret is required: %q", f.errs[fieldClientSecret])
	}
	if !strings.Contains(f.errs[fieldCallbackPort], "TCP port") || f.focus != fieldCallbackPort {
		t.Fatalf("port 70000: err %q, focus %s", f.errs[fieldCallbackPort], formFields[f.focus].label)
	}
	if len(h2.st.Calls()) != 0 {
		t.Fatalf("sent before the fields were right: %v", h2.st.Calls())
	}
}

// Only the chosen grant's fields are sent: a password typed before
// switching to client credentials, or a secret before choosing a public
// client, goes nowhere.
func TestFormSendsOnlyTheGrantsFields(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	for h.m.form.focus != fieldGrant {
		h.press("shift+tab")
	}
	h.press("space") // client credentials
	h.press("enter")
	nk := h.st.lastNew
	if nk.Grant != auth.GrantClientCredentials || nk.Username != "" || nk.Password != "" || nk.ClientSecret != testSecret {
		t.Fatalf("sent grant %q user %q password set %v secret set %v", nk.Grant, nk.Username, nk.Password != "", nk.ClientSecret != "")
	}

	h2 := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "cli", ClientSecret: testSecret, Label: "cli",
		Grant: auth.GrantPassword, Username: "u", Password: testPassword, PublicClient: true, CallbackPort: 8400}, nil)
	h2.press("enter")
	nk = h2.st.lastNew
	if !nk.Connection.IsPublic() || nk.ClientSecret != "" || nk.CallbackPort != 0 || nk.Password != testPassword {
		t.Fatalf("public password client sent: public %v secret set %v port %d", nk.Connection.IsPublic(), nk.ClientSecret != "", nk.CallbackPort)
	}
}

// deviceHarness submits a device-code form on a fake store whose grant
// prompts p and waits; the harness runs commands on goroutines.
func deviceHarness(t *testing.T, p auth.Prompt, grant auth.GrantType, w, hgt int) *harness {
	t.Helper()
	h := newFormHarness(t, Prefill{AuthURL: "http://127.0.0.1:8080", Realm: "master", ClientID: "shipping-api", Label: "laptop",
		Grant: grant, PublicClient: true}, func(f *fakeStore) {
		f.prompt = p
		f.approve = make(chan error, 1)
		f.created = make(chan error, 1)
	})
	h.send(windowSize(w, hgt))
	h.async()
	h.press("enter")
	h.pump("the sign-in screen", func() bool { return h.m.active == screenSignin })
	h.pump("the browser opened", func() bool { return h.m.toast.String() != "" })
	return h
}

// The device code screen: the code big and clear, the URLs, a countdown
// that moves with the clock, copies of the code and of the complete URL;
// an approval lands on the token details.
func TestDeviceCodeScreen(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 80, 24)
	h.mustShow("Sign in", "B C D F - G H J K", devicePrompt.VerificationURI, "?user_code=BCDF-GHJK", "Code expires    in 10:00",
		"asked every 5s", "c copy code", "u copy URL", "esc cancel")
	requireFits(t, h.view(), 80, 24)
	golden.RequireEqual(t, []byte(h.view()))

	// Opened as the CLI does: by $BROWSER only, on the one-time start link
	// (the complete URL carries the code, and a browser's argv is public).
	h.mustShow("Opened the sign-in URL in the browser.")
	h.openErr = browser.ErrNoBrowser
	h.press("b")
	h.pump("the second open", func() bool { return strings.Contains(h.m.toast.String(), "No browser") })
	if want := "true " + devicePrompt.StartURL; len(h.opened) != 2 || h.opened[0] != want || h.opened[1] != want {
		t.Fatalf("opened %q", h.opened)
	}

	h.clock.Advance(61 * time.Second)
	fire[tickMsg](h)
	h.mustShow("in 8:59")

	h.press("c")
	h.pump("the code's copy", func() bool { return len(h.clipboard) >= 1 })
	h.press("u")
	h.pump("the URL's copy", func() bool { return len(h.clipboard) >= 2 })
	h.pump("the copy's toast", func() bool { return strings.HasPrefix(h.m.toast.String(), "Copied") })
	if got := h.clipboard; len(got) != 2 || got[0] != "BCDF-GHJK" || got[1] != devicePrompt.VerificationURIComplete {
		t.Fatalf("copied %q", got)
	}
	h.mustShow("Copied the sign-in URL")

	// Modal: the keys that open other screens do nothing while it waits.
	h.press("2", "n", "1")
	if h.m.active != screenSignin {
		t.Fatalf("left the sign-in screen for %v", h.m.active)
	}

	h.st.approve <- nil
	h.pump("token details", func() bool { return h.m.active == screenDetails })
	if h.m.details.key.Label != "laptop" || h.m.grant != nil {
		t.Fatalf("details of %q, run left %v", h.m.details.key.Label, h.m.grant != nil)
	}
	h.mustShow("laptop", "device code")
	h.press("esc")
	if h.m.active == screenSignin || h.m.active == screenForm {
		t.Fatalf("esc went back to %v", h.m.active)
	}
}

// At 60×15 the device screen scrolls to everything it says.
func TestDeviceCodeScreenAt60x15(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 60, 15)
	h.mustShow("B C D F - G H J K")
	requireFits(t, h.view(), 60, 15)
	golden.RequireEqual(t, []byte(h.view()))
	h.press("G")
	h.mustShow("esc cancels")
	fitsExactly(t, h.view(), 60, 15)
}

// esc cancels the grant's context: the store keeps nothing, the form is back
// with its values, and the cancelled run's answer is dropped.
func TestDeviceCodeEscCancels(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 80, 24)
	h.press("esc")
	if h.m.active != screenForm || h.m.form.state != formEditing || h.m.grant != nil {
		t.Fatalf("after esc: %v, form %v", h.m.active, h.m.form.state)
	}
	select {
	case err := <-h.st.created:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the grant ended with %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the grant was not cancelled")
	}
	if keys, _ := h.st.Keys(); len(keys) != 0 {
		t.Fatalf("stored %d keys", len(keys))
	}
	h.mustShow("Cancelled: nothing was stored.")
	if got := h.m.form.inputs[fieldLabel].Value(); got != "laptop" {
		t.Fatalf("label %q after cancel", got)
	}
}

// A refusal (access denied, code expired) ends the wait: the form is back
// with the grant's words.
func TestDeviceCodeRefusedBackToForm(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 80, 24)
	h.clock.Advance(10 * time.Minute)
	fire[tickMsg](h)
	h.mustShow("expired", "The code has expired")
	h.st.approve <- &auth.Error{Kind: auth.KindLoginRequired, Msg: "the device code expired before it was approved", Hint: "start again"}
	h.pump("the form", func() bool { return h.m.active == screenForm })
	h.mustShow("the device code expired before it was approved")
}

// Browser sign-in: waiting for the browser, the URL to copy (c), a
// countdown; esc cancels.
func TestBrowserSigninScreen(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, browserPrompt, auth.GrantAuthCode, 80, 24)
	h.mustShow("Waiting for the browser", "code_challenge", "Comes back to", "127.0.0.1:43117/callback", "Waits until     in 5:00", "c copy URL")
	golden.RequireEqual(t, []byte(h.view()))
	h.press("c")
	h.pump("the copy", func() bool { return len(h.clipboard) >= 1 })
	if got := h.clipboard; len(got) != 1 || got[0] != browserPrompt.AuthURL {
		t.Fatalf("copied %q", got)
	}
	// The browser got the one-time start link, never the authorization URL.
	if want := "false " + browserPrompt.StartURL; len(h.opened) == 0 || h.opened[0] != want {
		t.Fatalf("opened %q, want %q", h.opened, want)
	}
	h.press("esc")
	if h.m.active != screenForm {
		t.Fatalf("esc: %v", h.m.active)
	}
}

// A prompt of a cancelled run does not bring its screen back.
func TestStalePromptIsDropped(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.send(grantPromptMsg{seq: 12345, prompt: devicePrompt})
	if h.m.active != screenForm {
		t.Fatalf("a stale prompt opened %v", h.m.active)
	}
}

// A device-code key logs in again through the sign-in screen: l shows the
// code, an approval brings the token details back with a new token; esc
// cancels and changes nothing.
func TestDeviceCodeKeyLogsInAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		k := f.add("laptop", "", time.Time{})
		k.Grant, k.Connection.PublicClient = auth.GrantDeviceCode, true
		f.keys["laptop"] = k
		f.prompt = devicePrompt
		f.approve = make(chan error, 1)
	})
	h.press("1")
	h.mustShow("grant device code (public client)")
	h.async()
	h.press("X", "y")
	h.pump("logged out", func() bool { return h.m.details.tokens == nil && h.m.details.state == detailsIdle })
	h.press("l")
	h.pump("the sign-in screen", func() bool { return h.m.active == screenSignin })
	if h.m.details.prompt {
		t.Fatal("a device-code key was asked for a password")
	}
	h.press("esc")
	if h.m.active != screenDetails || h.m.details.state != detailsIdle || h.m.grant != nil {
		t.Fatalf("after esc: %v, details %v", h.m.active, h.m.details.state)
	}
	h.mustShow("log in cancelled")

	h.press("l")
	h.pump("the sign-in screen", func() bool { return h.m.active == screenSignin })
	h.st.approve <- nil
	h.pump("a new token", func() bool { return h.m.active == screenDetails && h.m.details.tokens != nil })
	h.mustShow("valid")
}

// Every grant auth speaks has a row: a name, a table cell that fits, a
// form line. A grant added to auth without one fails here.
func TestEveryGrantHasAView(t *testing.T) {
	t.Parallel()
	for _, g := range auth.Grants() {
		v, ok := grantViews[g]
		if !ok {
			t.Errorf("grant %q has no row in grantViews", g)
			continue
		}
		if v.title == "" || v.about == "" || v.cell == "" || len(v.cell) > grantCellWidth {
			t.Errorf("grant %q: row %+v", g, v)
		}
	}
}

// On the sign-in screen no key means two things: each key is bound once in
// its help (which the footer and ? draw from the one key map).
func TestSigninKeysMeanOneThing(t *testing.T) {
	t.Parallel()
	for _, p := range []auth.Prompt{devicePrompt, browserPrompt} {
		grant := p.Grant
		h := deviceHarness(t, p, grant, 100, 30)
		seen := map[string]string{}
		for _, g := range h.m.FullHelp() {
			for _, b := range g {
				for _, k := range b.Keys() {
					if prev, ok := seen[k]; ok && prev != b.Help().Desc {
						t.Errorf("%s: %q is both %q and %q", grant, k, prev, b.Help().Desc)
					}
					seen[k] = b.Help().Desc
				}
			}
		}
		for _, nav := range []string{"1", "2", "3", "n"} {
			if _, ok := seen[nav]; ok {
				t.Errorf("%s: the modal screen's help offers %q", grant, nav)
			}
		}
	}
}

// The sign-in screen and the re-laid-out form fit small terminals; the form
// of each grant at 60×15 is pinned.
func TestGrantScreensFitSmallTerminals(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {50, 12}, {60, 15}} {
		for _, p := range []auth.Prompt{devicePrompt, browserPrompt} {
			h := deviceHarness(t, p, p.Grant, size[0], size[1])
			for _, k := range []string{"G", "pgdown", "g"} {
				h.send(scrollKey(k))
				fitsExactly(t, h.view(), size[0], size[1])
			}
		}
	}
	h := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "cli", Label: "laptop", Grant: auth.GrantDeviceCode,
		PublicClient: true}, nil)
	h.send(windowSize(60, 15))
	h.press("shift+tab") // from the grant to the last field: the form follows it
	requireFits(t, h.view(), 60, 15)
	h.mustShow("Client auth", "none (public client)")
	h.mustNotShow("Client Secret", "Username", "Callback port")
	golden.RequireEqual(t, []byte(h.view()))
}

// A grant that got its token just as esc cancelled it: the key exists, and
// the app says so instead of "nothing was stored" alone.
func TestCancelledGrantThatSucceededIsSaid(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 80, 24)
	seq := h.m.grant.seq
	h.press("esc")
	h.send(keyTokensMsg{seq: seq, op: opCreate, label: "laptop", key: store.Key{Label: "laptop"}})
	h.mustShow(`API key "laptop" was created before the cancel took effect.`)
	if h.m.active != screenForm {
		t.Fatalf("active %v", h.m.active)
	}
}

// At 40 columns (and at 34, where even the unspaced code no longer fits
// beside its name) the device code shows whole and the URLs break only
// between the pieces of their path, never inside the host.
func TestDeviceCodeScreenAt40x10(t *testing.T) {
	t.Parallel()
	for _, width := range []int{40, 34} {
		h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, width, 10)
		seen := ""
		for range 20 {
			seen += h.view() + "\n"
			h.press("j")
		}
		// The code itself, not the copy inside verification_uri_complete.
		whole := false
		for _, l := range strings.Split(seen, "\n") {
			if !strings.Contains(l, "user_code=") && (strings.Contains(l, "BCDF-GHJK") || strings.Contains(l, "B C D F - G H J K")) {
				whole = true
			}
		}
		if !whole {
			t.Errorf("the code is not shown whole at %d columns:\n%s", width, seen)
		}
		u, err := url.Parse(devicePrompt.VerificationURI)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(seen, u.Scheme+"://"+u.Host) {
			t.Errorf("the URL's host is cut at %d columns:\n%s", width, seen)
		}
		for _, l := range strings.Split(seen, "\n") {
			if ansi.StringWidth(l) > width {
				t.Errorf("a line wider than %d: %q", width, l)
			}
		}
	}
}

// After an interactive sign-in the toast says whose account the key uses.
func TestSigninSaysWhoSignedIn(t *testing.T) {
	t.Parallel()
	h := deviceHarness(t, devicePrompt, auth.GrantDeviceCode, 80, 24)
	h.st.mu.Lock()
	h.st.signedInAs = "alice"
	h.st.mu.Unlock()
	h.st.approve <- nil
	h.pump("token details", func() bool { return h.m.active == screenDetails })
	h.mustShow(`API key "laptop" created, signed in as alice.`)
}

// The JWT bearer grant asks for its assertion file, and an external client
// assertion for its own; both are sent as the key's sources, no secret.
func TestFormJWTBearerSendsTheAssertionFiles(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "ci", Label: "ci", Grant: auth.GrantJWTBearer,
		ClientAuth: auth.ClientAssertion}, nil)
	h.press("ctrl+s")
	f := h.m.form
	if f.errs[fieldAssertionFile] != "required" || f.errs[fieldClientAssertionFile] != "required" || f.errs[fieldClientSecret] != "" {
		t.Fatalf("errs %q", f.errs)
	}
	if len(h.st.Calls()) != 0 {
		t.Fatalf("sent before the files were given: %v", h.st.Calls())
	}
	f.inputs[fieldAssertionFile].SetValue("/run/ci/grant.jwt")
	f.inputs[fieldClientAssertionFile].SetValue("/run/ci/client.jwt")
	h.press("ctrl+s")
	nk := h.st.lastNew
	if nk.Grant != auth.GrantJWTBearer || nk.AssertionFile != "/run/ci/grant.jwt" || nk.ClientAssertionFile != "/run/ci/client.jwt" || nk.ClientSecret != "" {
		t.Fatalf("sent %+v", nk.Definition)
	}
}

// A failure about an assertion puts the focus on the field of its file:
// the grant's, or the client's.
func TestAssertionFaultsFocusTheirFile(t *testing.T) {
	t.Parallel()
	c, err := auth.NewClient(auth.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn := auth.Connection{TokenURL: "http://127.0.0.1:1/token", ClientID: "ci", ClientAuth: auth.ClientAssertion}
	_, grantErr := c.Obtain(ctx, auth.GrantJWTBearer, auth.Request{Conn: conn})
	src := &auth.AssertionSource{From: "the file ci.jwt", Fetch: func(context.Context) (string, error) { return "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", nil }}
	_, clientErr := c.Obtain(ctx, auth.GrantJWTBearer, auth.Request{Conn: conn, Assertion: src, ClientAuth: auth.ClientAuth{Method: auth.ClientAssertion}})
	if got := faultField(grantErr); got != fieldAssertionFile {
		t.Errorf("%v: field %d, want the assertion file's", grantErr, got)
	}
	if got := faultField(clientErr); got != fieldClientAssertionFile {
		t.Errorf("%v: field %d, want the client assertion file's", clientErr, got)
	}
}

// An assertion field takes a file, or after $ a command that prints the
// assertion (as --assertion-cmd): either is sent as the key's source.
func TestFormAssertionFromACommand(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{AuthURL: "https://auth.example.com", ClientID: "ci", Label: "ci", Grant: auth.GrantJWTBearer,
		ClientAuth: auth.ClientAssertion}, nil)
	f := h.m.form
	f.inputs[fieldAssertionFile].SetValue("  $ gh-oidc-token --audience shipping ")
	f.inputs[fieldClientAssertionFile].SetValue("/run/ci/client.jwt")
	h.press("ctrl+s")
	nk := h.st.lastNew
	if nk.AssertionCmd != "gh-oidc-token --audience shipping" || nk.AssertionFile != "" ||
		nk.ClientAssertionFile != "/run/ci/client.jwt" || nk.ClientAssertionCmd != "" {
		t.Fatalf("sent %+v", nk.Definition)
	}
	for flag, want := range map[string]string{"assertion-cmd": "the Assertion field", "client-assertion-cmd": "the Client assertion field under Advanced"} {
		if got := fieldSetting(flag, "CMD"); got != want {
			t.Errorf("fieldSetting(%s) = %q, want %q", flag, got, want)
		}
	}
}
