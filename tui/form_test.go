package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

const (
	testSecret   = "s3cr3t-client-value"
	testPassword = "hunter2-very-secret"
)

var demoPrefill = Prefill{
	AuthURL: "http://127.0.0.1:8080", Realm: "master", ClientID: "shipping-api",
	ClientSecret: testSecret, Username: "demo", Password: testPassword, Label: "demo", Scope: "email profile",
}

// newFormHarness opens Get API Key on a store without keys.
func newFormHarness(t *testing.T, p Prefill, setup func(*fakeStore)) *harness {
	t.Helper()
	h := newHarness(t, setup)
	h.m.cfg.prefill = p
	h.press("esc")
	h.press("n")
	if h.m.active != screenForm {
		t.Fatalf("active = %v, want the form", h.m.active)
	}
	return h
}

func TestFormValidationBeforeSending(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{}, nil)
	h.press("ctrl+s")
	if h.m.form.state != formEditing {
		t.Fatalf("state = %v, want editing", h.m.form.state)
	}
	if len(h.st.Calls()) != 0 {
		t.Fatalf("something was sent: %v", h.st.Calls())
	}
	for _, f := range []int{fieldAuthURL, fieldClientID, fieldClientSecret, fieldUsername, fieldPassword, fieldLabel} {
		if h.m.form.errs[f] != "required" {
			t.Errorf("%s: error %q, want required", formFields[f].label, h.m.form.errs[f])
		}
	}
	if h.m.form.errs[fieldRealm] != "" || h.m.form.errs[fieldScope] != "" {
		t.Error("realm (default master) and scope (optional) must not be required")
	}
	if h.m.form.focus != fieldAuthURL {
		t.Fatalf("focus = %s, want the first field at fault", formFields[h.m.form.focus].label)
	}
	golden.RequireEqual(t, []byte(h.view()))
}

func TestFormURLShapeAndUniqueLabel(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{}, func(f *fakeStore) { f.add("taken", "x", time.Time{}) })
	// From the last key: everything but secrets and label.
	if got := h.m.form.inputs[fieldAuthURL].Value(); got != "http://127.0.0.1:8080" {
		t.Fatalf("auth URL prefill = %q", got)
	}
	if got := h.m.form.inputs[fieldClientSecret].Value(); got != "" {
		t.Fatal("a stored key's secret must never be prefilled")
	}
	if h.m.form.focus != fieldClientSecret {
		t.Fatalf("focus = %s, want the first empty field", formFields[h.m.form.focus].label)
	}
	for h.m.form.focus != fieldAuthURL {
		h.press("shift+tab")
	}
	h.press("ctrl+u")
	h.typeText("http://auth.example.com")
	for h.m.form.focus != fieldLabel {
		h.press("tab")
	}
	h.typeText("taken")
	h.press("enter")
	if !strings.Contains(h.m.form.errs[fieldAuthURL], "plain http") {
		t.Errorf("auth URL error = %q, want the plain-http refusal", h.m.form.errs[fieldAuthURL])
	}
	if !strings.Contains(h.m.form.errs[fieldLabel], "exists") {
		t.Errorf("label error = %q, want not unique", h.m.form.errs[fieldLabel])
	}
	h.mustShow("plain http", "exists")
}

func TestFormFieldNavigation(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	start := h.m.form.focus
	h.press("tab")
	if h.m.form.focus != (start+1)%fieldCount {
		t.Fatalf("tab: focus %d", h.m.form.focus)
	}
	// The advanced options are folded: their toggle is the last field.
	h.press("shift+tab", "shift+tab")
	if start != 0 || h.m.form.focus != fieldAdvanced {
		t.Fatalf("shift+tab: focus %d", h.m.form.focus)
	}
	h.press("down", "up", "up")
	if h.m.form.focus != fieldScope {
		t.Fatalf("up/down: focus %d", h.m.form.focus)
	}
}

func TestFormFailureKeepsValuesAndFocusesTheField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{&auth.Error{Kind: auth.KindInvalidCredentials, Op: "login", Status: 401, Code: "invalid_grant", Description: "Invalid user credentials", Msg: "wrong username or password"}, fieldPassword},
		{&auth.Error{Kind: auth.KindInvalidClient, Op: "login", Status: 401, Code: "unauthorized_client", Msg: "the client secret is wrong"}, fieldClientSecret},
		{&auth.Error{Kind: auth.KindNetwork, Op: "login", Msg: "cannot reach the server"}, fieldAuthURL},
		{&auth.Error{Kind: auth.KindTimeout, Op: "login", Msg: "no answer in time"}, fieldAuthURL},
		{&auth.Error{Kind: auth.KindTLS, Op: "login", Msg: "certificate check failed"}, fieldAuthURL},
		{&auth.Error{Kind: auth.KindConfig, Msg: "bad URL"}, fieldAuthURL},
		{fmt.Errorf("create: %w", store.ErrLabelTaken), fieldLabel},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(formFields[c.want].label, " ", auth.KindOf(c.err)), func(t *testing.T) {
			h := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.createErr = c.err })
			h.press("enter")
			if calls := h.st.Calls(); len(calls) != 1 || calls[0] != "create demo" {
				t.Fatalf("calls = %v", calls)
			}
			f := h.m.form
			if f.state != formEditing || h.m.active != screenForm {
				t.Fatalf("state %v on %v, want editing the form", f.state, h.m.active)
			}
			if f.focus != c.want {
				t.Fatalf("focus = %s, want %s", formFields[f.focus].label, formFields[c.want].label)
			}
			vals := [fieldCount]string{fieldAuthURL: demoPrefill.AuthURL, fieldRealm: demoPrefill.Realm, fieldClientID: demoPrefill.ClientID,
				fieldClientSecret: demoPrefill.ClientSecret, fieldUsername: demoPrefill.Username, fieldPassword: demoPrefill.Password,
				fieldLabel: demoPrefill.Label, fieldScope: demoPrefill.Scope}
			for i, v := range vals {
				if f.inputs[i].Value() != v {
					t.Errorf("%s = %q after failure, want %q kept", formFields[i].label, f.inputs[i].Value(), v)
				}
			}
			if f.errs[c.want] == "" {
				t.Fatal("no error beside the field")
			}
			h.mustShow("✗ ")
			h.mustNotShow(testPassword, testSecret)
		})
	}
}

func TestFormUnknownFailureShowsGeneralError(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.createErr = errors.New("secret backend locked") })
	h.press("enter")
	if h.m.form.general == "" {
		t.Fatal("an error of no field must be shown below the form")
	}
	h.mustShow("secret backend locked")
}

func TestFormSuccessOpensTokenDetails(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.press("enter")
	if h.m.active != screenDetails {
		t.Fatalf("active = %v, want token details", h.m.active)
	}
	if h.m.details.key.Label != "demo" || h.m.details.tokens == nil {
		t.Fatalf("details show %q (tokens %v)", h.m.details.key.Label, h.m.details.tokens != nil)
	}
	h.mustShow("demo", "Bearer", "email profile", "5f3c-session", "in 5:00")
	h.mustNotShow(testPassword, testSecret)
	// esc goes back past the finished form.
	h.press("esc")
	if h.m.active == screenForm {
		t.Fatal("esc went back to the finished form")
	}
}

func TestFormSubmittingShowsSpinnerAndIgnoresKeys(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	act, _ := h.m.form.Update(keyMsg("enter"))
	if _, ok := act.(actSubmitKey); !ok {
		t.Fatalf("enter returned %T, want actSubmitKey", act)
	}
	if h.m.form.state != formSubmitting || h.m.form.Capturing() {
		t.Fatal("form must be submitting and not take text")
	}
	if a, _ := h.m.form.Update(keyMsg("x")); a != nil {
		t.Fatalf("a key while submitting returned %T", a)
	}
	h.mustShow("Requesting a token")
}

// At 80 columns a long error wraps under its field instead of losing its
// "what to do" part to truncation.
func TestFormErrorWrapsAt80Columns(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, func(f *fakeStore) {
		f.createErr = &auth.Error{Kind: auth.KindInvalidCredentials, Op: "login", Status: 401, Code: "invalid_grant",
			Description: "Invalid user credentials", Msg: "wrong username or password", Hint: "check them and try again"}
	})
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.press("enter")
	view := h.view()
	for _, l := range strings.Split(view, "\n") {
		if w := lipgloss.Width(l); w > 80 {
			t.Fatalf("line of width %d: %q", w, l)
		}
	}
	flat := strings.Join(strings.Fields(view), " ")
	if !strings.Contains(flat, "check them and try again") {
		t.Fatalf("the hint was cut off:\n%s", view)
	}
}

// The demo prefills the label "demo"; once a key has it, the form proposes
// the next free one instead of a label its own validation would refuse.
func TestFormPrefillsAFreeLabel(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, func(f *fakeStore) {
		f.add(demoPrefill.Label, "demo", time.Time{})
		f.add(demoPrefill.Label+"-2", "demo", time.Time{})
	})
	if got, want := h.m.form.inputs[fieldLabel].Value(), demoPrefill.Label+"-3"; got != want {
		t.Fatalf("label prefilled %q, want %q", got, want)
	}
	h.press("enter")
	if calls := h.st.Calls(); len(calls) == 0 || calls[0] != "create "+demoPrefill.Label+"-3" {
		t.Fatalf("calls = %v", calls)
	}
}

// ? opens the help where the focused field is a choice (the grant) and the
// footer says "? help"; in a text field, the hidden Client Secret included,
// ? is text (a secret may hold one) and the footer says "f1 help", which
// opens the help from anywhere.
func TestFormHelpKeyFollowsTheFooter(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	if h.m.form.focus != fieldGrant {
		t.Fatalf("the form opened on field %d, not the grant", h.m.form.focus)
	}
	if foot := h.m.renderFooter(); !strings.Contains(foot, "? help") {
		t.Fatalf("footer on the grant choice: %q", foot)
	}
	h.press("?")
	if !h.m.showHelp {
		t.Fatal("? on the grant choice did not open the help")
	}
	h.press("esc")
	for i := 0; h.m.form.focus != fieldClientSecret; i++ {
		if i > fieldCount {
			t.Fatal("tab never reached the Client Secret")
		}
		h.press("tab")
	}
	if foot := h.m.renderFooter(); !strings.Contains(foot, "f1 help") || strings.Contains(foot, "? help") {
		t.Fatalf("footer in the Client Secret: %q", foot)
	}
	before := h.m.form.inputs[fieldClientSecret].Value()
	h.press("?")
	if h.m.showHelp || h.m.form.inputs[fieldClientSecret].Value() != before+"?" {
		t.Fatalf("? in the Client Secret: help %v, value grew by %q", h.m.showHelp, strings.TrimPrefix(h.m.form.inputs[fieldClientSecret].Value(), before))
	}
	h.press("f1")
	if !h.m.showHelp {
		t.Fatal("f1 in a text field did not open the help")
	}
	h.press("f1")
	if h.m.showHelp || h.m.active != screenForm || h.m.form.inputs[fieldClientSecret].Value() != before+"?" {
		t.Fatal("closing the help lost the form's values")
	}
}

// esc while the form's token request hangs cancels it: the form is back
// with every value, says nothing was stored, and the late answer is dropped.
func TestFormEscCancelsAHungRequest(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	h := newFormHarness(t, demoPrefill, func(f *fakeStore) { f.hangCreate = started })
	h.async()
	h.press("enter")
	h.pump("the request to start", func() bool {
		select {
		case <-started:
			return true
		default:
			return false
		}
	})
	h.mustShow("Requesting a token")
	if foot := h.m.renderFooter(); !strings.Contains(foot, "esc cancel") {
		t.Fatalf("footer while requesting: %q", foot)
	}
	h.press("esc")
	if h.m.active != screenForm || h.m.form.state != formEditing {
		t.Fatalf("esc while requesting: screen %v, form state %v", h.m.active, h.m.form.state)
	}
	h.mustShow("Cancelled: nothing was stored.")
	for i, want := range map[int]string{fieldAuthURL: demoPrefill.AuthURL, fieldClientID: demoPrefill.ClientID, fieldClientSecret: demoPrefill.ClientSecret, fieldLabel: demoPrefill.Label} {
		if got := h.m.form.inputs[i].Value(); got != want {
			t.Errorf("field %s after the cancel: %q, want %q", formFields[i].label, got, want)
		}
	}
	// The cancelled request ends (its context is done); its answer changes nothing.
	h.pump("the cancelled request's answer", func() bool { return h.m.req.inflight == 0 })
	if h.m.active != screenForm || h.m.form.general != "Cancelled: nothing was stored." {
		t.Fatalf("the late answer changed the form: %v %q", h.m.active, h.m.form.general)
	}
}

// The advanced connection options: folded, then token URL and HTTP Basic
// (client_secret_basic, the second method after the default).
func TestFormAdvancedOptions(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, demoPrefill, nil)
	h.mustNotShow("Token URL", "Issuer")
	h.mustShow("Advanced")
	for h.m.form.focus != fieldAdvanced {
		h.press("tab")
	}
	h.press(" ")
	h.mustShow("Token URL", "Issuer", "Client auth", "client secret (default)")
	h.press("tab")
	h.typeText("http://127.0.0.1:9/token")
	h.press("tab", "tab", "right", "right")
	h.mustShow("‹ client_secret_basic ›")
	h.press("enter")
	calls := h.st.Calls()
	if !contains(calls, "create demo") {
		t.Fatalf("no create: %v", calls)
	}
	k := h.st.keys["demo"]
	if k.Connection.TokenURL != "http://127.0.0.1:9/token" || k.Connection.AuthMethod() != auth.ClientSecretBasic {
		t.Fatalf("conn = %+v", k.Connection)
	}
}

func TestFormTokenURLAndIssuerExclude(t *testing.T) {
	t.Parallel()
	h := newFormHarness(t, Prefill{TokenURL: "http://127.0.0.1:9/t", Issuer: "http://127.0.0.1:9/i"}, nil)
	h.mustShow("Token URL", "Issuer")
	h.press("enter")
	if h.m.form.errs[fieldIssuer] == "" || h.m.form.errs[fieldAuthURL] != "" {
		t.Fatalf("errs = %q", h.m.form.errs)
	}
}
