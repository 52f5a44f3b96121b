package tui

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// formState is the Get API Key flow: editing → submitting → done or failed
// (failed is editing again with the error shown beside its field). A
// generated client key passes through registering: its public key set is
// shown until the person has registered it with the realm.
type formState int

const (
	formEditing formState = iota
	formSubmitting
	formRegistering
	formDone
)

// The fields of the Get API Key form, in order: indices into formFields,
// which says everything else about each.
const (
	fieldGrant = iota // a choice: how the key obtains tokens
	fieldAuthURL
	fieldRealm
	fieldClientID
	fieldClientSecret
	fieldUsername
	fieldPassword
	fieldAssertionFile // the jwt-bearer grant's assertion: a file, or $ a command
	fieldLabel
	fieldScope
	fieldAdvanced // the section toggle: shows the connection options below
	fieldTokenURL
	fieldIssuer
	fieldClientAuth          // a choice: how the client authenticates (auth.ClientAuthMethods)
	fieldGenerateKey         // a toggle: private_key_jwt with a key made here
	fieldClientKey           // the client's private key file (private_key_jwt, TLS)
	fieldClientCert          // the client certificate file (TLS)
	fieldClientAssertionFile // the client_assertion method's: a file, or $ a command
	fieldDPoP                // a toggle: DPoP-bound tokens
	fieldPAR                 // a toggle: push the authorization request (authcode)
	fieldCallbackPort        // browser sign-in's fixed loopback port
	fieldCount
)

// fieldKind is what a form field holds and how it is changed.
type fieldKind int

const (
	kindText    fieldKind = iota // typed text
	kindSecret                   // typed text, masked and taken verbatim
	kindChoice                   // one of options (space/←/→)
	kindToggle                   // on or off (space)
	kindSection                  // a toggle that shows the advanced fields
)

// fieldSpec is one field of the form: how it shows, when, what it accepts
// and where its value goes in the new key. A new field is one row of
// formFields (and its constant above).
type fieldSpec struct {
	name        string // stable name (errors and hints refer to the field by it)
	label       string // what the form shows
	kind        fieldKind
	optional    bool   // the label says "(opt.)"
	placeholder string // text fields
	// advanced: the field shows only with the Advanced section open.
	advanced bool
	// when reports whether the grant and the other choices use the field
	// (nil: always).
	when func(f *form) bool
	// on, off describe a toggle's two states.
	on, off string
	// options are a choice's values, first the default; title names one.
	options func(f *form) []string
	title   func(v string) string
	// required: a shown text field must not be empty.
	required bool
	// prefill is the field's first value from a Prefill: text, or "x" for
	// a toggle that starts on.
	prefill func(p Prefill) string
	// check returns the error of the shown field's value v, "" for none.
	check func(f *form, v string) string
	// fill puts the shown field's value v into what is sent.
	fill func(f *form, v string, sub *submission)
}

// grantField reports whether the chosen grant asks for field i beyond the
// connection's (grantViews).
func grantField(i int) func(f *form) bool {
	return func(f *form) bool { return viewOf(f.grantType()).needs(i) }
}

// checkURL is the check of a URL field.
func checkURL(_ *form, v string) string {
	if v == "" {
		return ""
	}
	if err := auth.CheckURL(v); err != nil {
		return "URL " + err.Error()
	}
	return ""
}

// onIf is a toggle's prefill.
func onIf(b bool) string {
	if b {
		return "x"
	}
	return ""
}

// formFields is the form, one row per field, indexed by the field
// constants. It is set in init: its functions refer back to it through the
// form's methods.
var formFields [fieldCount]fieldSpec

func init() {
	formFields = [fieldCount]fieldSpec{
		fieldGrant: {name: "grant", label: "Grant", kind: kindChoice,
			options: grantOptions,
			title:   func(v string) string { return viewOf(auth.GrantType(v)).title },
			prefill: func(p Prefill) string { return string(p.Grant.Or()) },
			fill:    func(f *form, _ string, sub *submission) { sub.nk.Grant = f.grantType() }},
		fieldAuthURL: {name: "auth_url", label: "Auth URL", placeholder: "https://auth.example.com",
			prefill: func(p Prefill) string { return p.AuthURL },
			check:   checkAuthURL,
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.AuthURL = strings.TrimRight(v, "/") }},
		fieldRealm: {name: "realm", label: "Realm", placeholder: auth.DefaultRealm,
			prefill: func(p Prefill) string { return cmp.Or(p.Realm, auth.DefaultRealm) },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.Realm = cmp.Or(v, auth.DefaultRealm) }},
		fieldClientID: {name: "client_id", label: "Client ID", placeholder: "the registered client application", required: true,
			prefill: func(p Prefill) string { return p.ClientID },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.ClientID = v }},
		fieldClientSecret: {name: "client_secret", label: "Client Secret", kind: kindSecret, placeholder: "client secret", required: true,
			when:    func(f *form) bool { return f.clientAuth().UsesSecret() },
			prefill: func(p Prefill) string { return p.ClientSecret },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.ClientSecret = v }},
		fieldUsername: {name: "username", label: "Username", placeholder: "user of the client application", required: true,
			when: grantField(fieldUsername), prefill: func(p Prefill) string { return p.Username },
			fill: func(_ *form, v string, sub *submission) { sub.nk.Username = v }},
		fieldPassword: {name: "password", label: "Password", kind: kindSecret, placeholder: "password", required: true,
			when: grantField(fieldPassword), prefill: func(p Prefill) string { return p.Password },
			fill: func(_ *form, v string, sub *submission) { sub.nk.Password = v }},
		fieldAssertionFile: {name: "assertion_file", label: "Assertion", required: true,
			placeholder: "a CI token file, or $ a command printing one",
			when:        grantField(fieldAssertionFile),
			fill: func(_ *form, v string, sub *submission) {
				sub.nk.AssertionFile, sub.nk.AssertionCmd = assertionFrom(v)
			}},
		fieldLabel: {name: "label", label: "Label", placeholder: "a name for this key", required: true,
			prefill: func(p Prefill) string { return p.Label },
			check:   checkLabel,
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Label = v }},
		fieldScope: {name: "scope", label: "Scope", optional: true, placeholder: "optional, e.g. write",
			prefill: func(p Prefill) string { return p.Scope },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.Scopes = strings.Fields(v) }},
		fieldAdvanced: {name: "advanced", label: "Advanced", kind: kindSection,
			on: "▾ ctrl+o hides", off: "▸ ctrl+o: client auth, DPoP, URLs"},
		fieldTokenURL: {name: "token_url", label: "Token URL", advanced: true,
			placeholder: "optional: the token endpoint, overriding the realm's",
			prefill:     func(p Prefill) string { return p.TokenURL }, check: checkURL,
			fill: func(_ *form, v string, sub *submission) { sub.nk.Connection.TokenURL = v }},
		fieldIssuer: {name: "issuer", label: "Issuer", advanced: true, placeholder: "optional: an OIDC issuer (discovery)",
			prefill: func(p Prefill) string { return p.Issuer },
			check:   checkIssuer,
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.Issuer = v }},
		fieldClientAuth: {name: "client_auth", label: "Client auth", kind: kindChoice, advanced: true,
			options: clientAuthOptions, title: clientAuthTitle, prefill: clientAuthPrefill,
			fill: func(_ *form, v string, sub *submission) { sub.nk.Connection.ClientAuth = auth.ClientAuthMethod(v) }},
		fieldGenerateKey: {name: "generate_client_key", label: "Generate key", kind: kindToggle, advanced: true,
			on: "make an EC P-256 key here; register it before the grant", off: "use a key file (space: generate one)",
			when:    func(f *form) bool { return f.clientAuth().Needs().KeyMadeHere() },
			prefill: func(p Prefill) string { return onIf(p.GenerateClientKey) },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.GenerateClientKey = v != "" }},
		fieldClientKey: {name: "client_key", label: "Client key file", advanced: true, required: true,
			placeholder: "the client's private key: a PEM or JWK file",
			when:        needsKeyFile,
			prefill:     func(p Prefill) string { return p.ClientKeyFile },
			fill:        func(_ *form, v string, sub *submission) { sub.keyFile = v }},
		fieldClientCert: {name: "client_cert", label: "Client cert file", advanced: true, required: true,
			placeholder: "the client certificate: a PEM file",
			when:        func(f *form) bool { return f.clientAuth().Needs().Cert },
			prefill:     func(p Prefill) string { return p.ClientCertFile },
			fill:        func(_ *form, v string, sub *submission) { sub.certFile = v }},
		fieldClientAssertionFile: {name: "client_assertion_file", label: "Client assertion", advanced: true, required: true,
			placeholder: "the client's token file, or $ a command printing one",
			when:        func(f *form) bool { return f.clientAuth().Needs().External },
			fill: func(_ *form, v string, sub *submission) {
				sub.nk.ClientAssertionFile, sub.nk.ClientAssertionCmd = assertionFrom(v)
			}},
		fieldDPoP: {name: "dpop", label: "DPoP", kind: kindToggle, advanced: true,
			on: "tokens bound to a DPoP key of this key's own", off: "bearer tokens (space: DPoP-bound)",
			prefill: func(p Prefill) string { return onIf(p.DPoP) },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.DPoP = v != "" }},
		fieldPAR: {name: "par", label: "PAR", kind: kindToggle, advanced: true,
			on: "push the request when the realm offers it", off: "a plain authorization URL",
			when:    func(f *form) bool { return f.grantType() == auth.GrantAuthCode },
			prefill: func(p Prefill) string { return onIf(!p.NoPAR) },
			fill:    func(_ *form, v string, sub *submission) { sub.nk.Connection.NoPAR = v == "" }},
		fieldCallbackPort: {name: "callback_port", label: "Callback port", advanced: true,
			placeholder: "optional: the registered port of http://127.0.0.1:PORT/callback",
			when:        grantField(fieldCallbackPort),
			prefill:     func(p Prefill) string { return portText(p.CallbackPort) },
			check:       checkPort,
			fill:        func(_ *form, v string, sub *submission) { sub.nk.CallbackPort, _ = strconv.Atoi(v) }}, // checked
	}
}

// The fields' functions that decide something: the rows of formFields name
// them.

// grantOptions are the grants the Grant field offers.
func grantOptions(f *form) []string {
	names := make([]string, len(f.grants))
	for i, g := range f.grants {
		names[i] = string(g)
	}
	return names
}

// checkAuthURL: the auth URL is required unless a token URL or an issuer
// says where tokens come from.
func checkAuthURL(f *form, v string) string {
	if v == "" && f.shownValue(fieldTokenURL) == "" && f.shownValue(fieldIssuer) == "" {
		return "required"
	}
	return checkURL(f, v)
}

// checkLabel: a label is clean text that no other key has.
func checkLabel(f *form, v string) string {
	switch {
	case !text.IsClean(v):
		return "must not contain control characters"
	case f.taken != nil && f.taken(v):
		return "a key with this label exists; pick another"
	}
	return ""
}

// checkIssuer: an issuer is a URL, and not given beside a token URL.
func checkIssuer(f *form, v string) string {
	if v != "" && f.shownValue(fieldTokenURL) != "" {
		return "give a token URL or an issuer, not both"
	}
	return checkURL(f, v)
}

// clientAuthOptions are the client authentication methods, the default
// first; a public client only for a grant that may use one.
func clientAuthOptions(f *form) []string {
	names := []string{""}
	for _, m := range auth.ClientAuthMethods() {
		if !m.Needs().Public || viewOf(f.grantType()).public {
			names = append(names, string(m))
		}
	}
	return names
}

// clientAuthTitle names a client authentication method.
func clientAuthTitle(v string) string {
	switch auth.ClientAuthMethod(v) {
	case "":
		return "client secret (default)"
	case auth.ClientAuthNone:
		return "none (public client)"
	}
	return v
}

// clientAuthPrefill is the method a Prefill asks for, by name or by the
// older flags.
func clientAuthPrefill(p Prefill) string {
	switch {
	case p.ClientAuth != "":
		return string(p.ClientAuth)
	case p.PublicClient:
		return string(auth.ClientAuthNone)
	case p.BasicAuth:
		return string(auth.ClientSecretBasic)
	}
	return ""
}

// needsKeyFile: the client's method signs with a key, and it is not one
// generated here.
func needsKeyFile(f *form) bool {
	n := f.clientAuth().Needs()
	return n.Key && !(n.KeyMadeHere() && f.on[fieldGenerateKey])
}

// portText is a port as the field shows it ("" for none).
func portText(port int) string {
	if port > 0 {
		return strconv.Itoa(port)
	}
	return ""
}

// checkPort: a port is a TCP port, or empty.
func checkPort(_ *form, v string) string {
	if n, err := strconv.Atoi(v); v != "" && (err != nil || n < 1 || n > 65535) {
		return "a TCP port, 1 to 65535 (empty: any free port)"
	}
	return ""
}

// isToggle reports whether field i is a toggle (Choose flips it), not text.
func isToggle(i int) bool { k := formFields[i].kind; return k == kindToggle || k == kindSection }

// isText reports whether field i takes text (not a toggle, not a choice).
func isText(i int) bool { k := formFields[i].kind; return k == kindText || k == kindSecret }

// form is the credentials walk-through ("Get API Key").
type form struct {
	c             *common
	width, height int
	wait          waitClock // how long the request has been in flight
	inputs        [fieldCount]textinput.Model
	on            [fieldCount]bool   // the toggles (and the Advanced section) that are on
	choice        [fieldCount]string // the choices' values
	focus         int
	state         formState
	errs          [fieldCount]string // inline errors, per field
	general       string             // an error that belongs to no field
	taken         func(string) bool  // whether a key has the label: the uniqueness check
	spinner       func() string      // the root's spinner frame
	grants        []auth.GrantType   // what the grant field offers (auth.Grants)
	jwks          string             // a generated client key's public key set, while formRegistering
	pane          pane
}

func newForm(c *common, spinner func() string, grants []auth.GrantType) *form {
	f := &form{c: c, spinner: spinner, pane: newPane(c), grants: grants}
	for i, spec := range formFields {
		ti := c.styles.newTextInput("")
		ti.Placeholder = spec.placeholder
		ti.CharLimit = 2048
		if spec.kind == kindSecret {
			ti.EchoMode = textinput.EchoPassword
			ti.EchoCharacter = '•'
		}
		f.inputs[i] = ti
	}
	f.inputs[fieldRealm].SetValue(auth.DefaultRealm)
	return f
}

// restyle applies new styles to the inputs.
func (f *form) restyle() {
	for i := range f.inputs {
		f.inputs[i].SetStyles(f.c.styles.TextInput)
	}
}

// reset prepares the form for a new key: values from p (secrets included
// only from p), errors cleared, focus on the first empty field. The
// Advanced section opens when p sets one of its fields.
func (f *form) reset(p Prefill, taken func(string) bool) tea.Cmd {
	f.on, f.choice = [fieldCount]bool{}, [fieldCount]string{}
	for i, spec := range formFields {
		v := ""
		if spec.prefill != nil {
			v = spec.prefill(p)
		}
		switch spec.kind {
		case kindToggle, kindSection:
			f.on[i] = v != ""
		case kindChoice:
			f.choice[i] = v
		default:
			f.inputs[i].SetValue(v)
		}
		f.inputs[i].CursorStart() // a field without focus shows its start
		if spec.advanced && spec.prefill != nil && v != spec.prefill(Prefill{}) {
			f.on[fieldAdvanced] = true // a value that is not the default shows
		}
	}
	f.taken = taken
	f.errs = [fieldCount]string{}
	f.general = ""
	f.state = formEditing
	first := 0
	for i := range fieldScope {
		if isText(i) && f.shown(i) && f.inputs[i].Value() == "" {
			first = i
			break
		}
	}
	f.pane.vp.GotoTop()
	return f.focusOn(first)
}

// chosen is choice i's value: the one picked when the choice offers it
// now, else its first option (the default).
func (f *form) chosen(i int) string {
	opts := formFields[i].options(f)
	if len(opts) == 0 {
		return ""
	}
	if slices.Contains(opts, f.choice[i]) {
		return f.choice[i]
	}
	return opts[0]
}

// grantType is the grant chosen.
func (f *form) grantType() auth.GrantType {
	if len(f.grants) == 0 {
		return auth.GrantPassword
	}
	return auth.GrantType(f.chosen(fieldGrant))
}

// clientAuth is the client authentication chosen ("": the secret, Basic
// when the server wants it).
func (f *form) clientAuth() auth.ClientAuthMethod {
	return auth.ClientAuthMethod(f.chosen(fieldClientAuth))
}

// shown reports whether field i is on the form now: the grant needs it,
// and the advanced options are open when it is one of them.
func (f *form) shown(i int) bool {
	return f.relevant(i) && (!formFields[i].advanced || f.on[fieldAdvanced])
}

// relevant reports whether the chosen grant (and client kind) uses field i.
func (f *form) relevant(i int) bool { return formFields[i].when == nil || formFields[i].when(f) }

// shownValue is field i's value when it is shown, else "".
func (f *form) shownValue(i int) string {
	if !f.shown(i) {
		return ""
	}
	return f.value(i)
}

// focusOn focuses field i (a hidden advanced field opens the options).
func (f *form) focusOn(i int) tea.Cmd {
	for j := range f.inputs {
		if f.inputs[j].Focused() {
			f.inputs[j].CursorStart() // leaving: show its start again
		}
		f.inputs[j].Blur()
	}
	f.focus = (i + fieldCount) % fieldCount
	if formFields[f.focus].advanced {
		f.on[fieldAdvanced] = true
	}
	f.follow()
	if !isText(f.focus) {
		return nil
	}
	f.inputs[f.focus].CursorEnd()
	return f.inputs[f.focus].Focus()
}

// step moves the focus by dir (+1, -1) over the fields shown.
func (f *form) step(dir int) tea.Cmd {
	i := f.focus
	for range fieldCount {
		i = (i + dir + fieldCount) % fieldCount
		if f.shown(i) {
			break
		}
	}
	return f.focusOn(i)
}

// follow scrolls the form to its focused field.
func (f *form) follow() {
	content, line := f.content()
	f.pane.follow(content, line)
}

// sayGeneral puts msg below the fields (it belongs to no field: a
// cancellation, a failure of no field), keeps the focus, and scrolls the
// form down to its last line, where msg is, so that it is in sight on a
// small screen.
func (f *form) sayGeneral(msg string) tea.Cmd {
	f.general = msg
	cmd := f.focusOn(f.focus)
	content, _ := f.content()
	f.pane.follow(content, strings.Count(content, "\n"))
	return cmd
}

func (f *form) SetSize(width, height int) {
	f.width, f.height = width, height
	f.pane.setSize(width, height)
	w := width - 22
	if w > 70 {
		w = 70
	}
	if w < 10 {
		w = 10
	}
	// A field scrolls its text to keep the cursor in sight, and keeps that
	// scroll when its width changes: set the cursor again at the new width.
	// A field without focus shows its start (the scheme of a URL), the
	// focused one keeps its cursor.
	for i := range f.inputs {
		f.inputs[i].SetWidth(w)
		pos := f.inputs[i].Position()
		f.inputs[i].CursorStart()
		if i == f.focus && f.inputs[i].Focused() {
			f.inputs[i].SetCursor(pos)
		}
	}
}

// Capturing: a field always has focus while editing; registering a key
// takes every key too (the grant waits for enter or esc).
func (f *form) Capturing() bool { return f.state == formEditing || f.state == formRegistering }

// register shows a generated client key's public key set to register.
func (f *form) register(jwks string) {
	f.state, f.jwks = formRegistering, jwks
	f.pane.vp.GotoTop()
}

// toggleAdvanced shows or hides the advanced options; hiding them while
// one has focus moves the focus to the Advanced line.
func (f *form) toggleAdvanced() tea.Cmd {
	f.on[fieldAdvanced] = !f.on[fieldAdvanced]
	if !f.on[fieldAdvanced] && formFields[f.focus].advanced {
		return f.focusOn(fieldAdvanced)
	}
	f.follow()
	return nil
}

// Typing: the focused field takes text (? is typed there, f1 opens help).
func (f *form) Typing() bool { return f.state == formEditing && isText(f.focus) }

// Update dispatches by the form's state: the generated key's registration,
// the fields while editing, else the wait for the request (or its end).
func (f *form) Update(msg tea.Msg) (action, tea.Cmd) {
	switch f.state {
	case formRegistering:
		return f.updateRegistering(msg)
	case formEditing:
		return f.updateEditing(msg)
	}
	return f.updateWaiting(msg)
}

// updateWaiting handles a key while the request is in flight (esc cancels
// it; the values stay) or the key is made (esc goes back).
func (f *form) updateWaiting(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, f.c.keys.Back) {
		if f.state == formSubmitting {
			return actCancelGrant{}, nil // the request is cancelled, the values stay
		}
		return actBack{}, nil
	}
	return nil, nil
}

// updateEditing handles the fields: a key the form binds, the wheel
// scrolling them, else the message goes to the focused text field.
func (f *form) updateEditing(msg tea.Msg) (action, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if act, cmd, done := f.editingKey(msg); done {
			return act, cmd
		}
	case tea.MouseWheelMsg:
		f.scrollFields(msg)
		return nil, nil
	}
	if !isText(f.focus) {
		return nil, nil
	}
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	if _, ok := msg.(tea.KeyPressMsg); ok {
		f.errs[f.focus] = ""
	}
	return nil, cmd
}

// editingKey handles the keys the form binds while editing: back, submit,
// the Advanced section, moving among the fields, the pages, and on a
// choice or toggle ←/→/space (it takes no other key). done is false for
// any other key: it is typed into the focused field.
func (f *form) editingKey(k tea.KeyPressMsg) (act action, cmd tea.Cmd, done bool) {
	km := f.c.keys
	switch {
	case key.Matches(k, km.Back):
		return actBack{}, nil, true
	case key.Matches(k, km.Submit), key.Matches(k, km.Enter):
		act, cmd := f.submit()
		return act, cmd, true
	case key.Matches(k, km.Advanced):
		return nil, f.toggleAdvanced(), true
	case key.Matches(k, km.NextField):
		return nil, f.step(+1), true
	case key.Matches(k, km.PrevField):
		return nil, f.step(-1), true
	case key.Matches(k, km.PageUp), key.Matches(k, km.PageDown):
		f.scrollFields(k)
		return nil, nil, true
	case !isText(f.focus):
		if key.Matches(k, km.Choose) {
			f.choose(k.String() == "left")
		}
		return nil, nil, true
	}
	return nil, nil, false
}

// scrollFields scrolls the fields by msg (a page key or the wheel).
func (f *form) scrollFields(msg tea.Msg) {
	content, _ := f.content()
	f.pane.scroll(msg, f.c.keys, content, false)
}

// updateRegistering: enter goes on (the key is registered), c copies the
// key set, esc gives up (nothing is stored); the key set scrolls.
func (f *form) updateRegistering(msg tea.Msg) (action, tea.Cmd) {
	content, _ := f.content()
	if f.pane.scroll(msg, f.c.keys, content, true) {
		return nil, nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil, nil
	}
	km := f.c.keys
	switch {
	case key.Matches(k, km.Registered):
		return actRegistered{}, nil
	case key.Matches(k, km.Copy):
		return actCopyText{text: f.jwks, what: "public key set"}, nil
	case key.Matches(k, km.Cancel):
		return actCancelGrant{}, nil
	}
	return nil, nil
}

// choose changes the focused choice: the next grant (back: the previous
// one), or flips a toggle. The fields shown change with it; what was typed
// in a field that hides is kept for when it shows again, its error goes.
func (f *form) choose(back bool) {
	if i := f.focus; formFields[i].kind == kindChoice {
		opts := formFields[i].options(f)
		if n := len(opts); n > 0 {
			step := 1
			if back {
				step = n - 1
			}
			f.choice[i] = opts[(max(0, slices.Index(opts, f.chosen(i)))+step)%n]
		}
		if i == fieldGrant {
			f.errs = [fieldCount]string{}
			f.general = ""
		}
		for j := range f.errs {
			if !f.shown(j) {
				f.errs[j] = ""
			}
		}
	} else if isToggle(f.focus) {
		f.on[f.focus] = !f.on[f.focus]
		for i := range f.errs {
			if !f.shown(i) {
				f.errs[i] = ""
			}
		}
	}
	f.follow()
}

// value returns a field's text, trimmed (secrets are taken verbatim), or
// "x" for a toggle that is on.
func (f *form) value(i int) string {
	switch formFields[i].kind {
	case kindSecret:
		return f.inputs[i].Value()
	case kindToggle, kindSection:
		return onIf(f.on[i])
	case kindChoice:
		return f.chosen(i)
	}
	return strings.TrimSpace(f.inputs[i].Value())
}

// validate checks the fields shown before anything is sent; it returns the
// first field at fault, or -1.
func (f *form) validate() int {
	f.errs = [fieldCount]string{}
	f.general = ""
	bad := -1
	for i, spec := range formFields {
		if !f.shown(i) {
			continue
		}
		v := f.value(i)
		switch {
		case spec.required && v == "":
			f.errs[i] = "required"
		case spec.check != nil:
			f.errs[i] = spec.check(f, v)
		}
		if f.errs[i] != "" && bad < 0 {
			bad = i
		}
	}
	return bad
}

// submit sends the new key: each field shown fills its part of it. A
// secret typed before the person chose a public client, or a password
// before client credentials, is not sent.
func (f *form) submit() (action, tea.Cmd) {
	if bad := f.validate(); bad >= 0 {
		return nil, f.focusOn(bad)
	}
	var sub submission
	for i, spec := range formFields {
		if spec.fill != nil && f.shown(i) {
			spec.fill(f, f.value(i), &sub)
		}
	}
	f.state = formSubmitting
	for j := range f.inputs {
		f.inputs[j].Blur()
	}
	return actSubmitKey{sub: sub}, nil
}

// fail returns the form to editing with every value kept, the field at
// fault focused and the error beside it.
func (f *form) fail(err error) tea.Cmd {
	f.state = formEditing
	field := faultField(err)
	msg := errText(err)
	if field < 0 || !f.relevant(field) { // the grant has no such field: said below the form
		return f.sayGeneral(msg)
	}
	f.errs[field] = msg
	return f.focusOn(field)
}

// faultFields maps each kind of auth failure to the form field that must
// change. A new kind is one line here.
var faultFields = map[auth.ErrorKind]int{
	auth.KindInvalidCredentials:  fieldPassword,
	auth.KindCredentialsRefused:  fieldPassword, // a server that does not say which: the user's part first
	auth.KindInvalidClient:       fieldClientSecret,
	auth.KindDirectGrantDisabled: fieldClientID,
	auth.KindInvalidScope:        fieldScope,
	auth.KindAccountDisabled:     fieldUsername,
	auth.KindAccountNotSetUp:     fieldUsername,
	auth.KindNetwork:             fieldAuthURL,
	auth.KindTimeout:             fieldAuthURL,
	auth.KindTLS:                 fieldAuthURL,
	auth.KindConfig:              fieldAuthURL,
	auth.KindMalformedResponse:   fieldAuthURL,
}

// faultField maps a failure to the form field that must change, or -1.
func faultField(err error) int {
	if fe := (*fieldError)(nil); errors.As(err, &fe) {
		return fe.field
	}
	if errors.Is(err, store.ErrLabelTaken) {
		return fieldLabel
	}
	if about, client := auth.AssertionFault(err); about && client {
		return fieldClientAssertionFile
	} else if about {
		return fieldAssertionFile
	}
	if f, ok := faultFields[auth.KindOf(err)]; ok {
		return f
	}
	return -1
}

func (f *form) View() string {
	content, _ := f.content()
	return f.pane.view(content)
}

// content is every line of the form, and the line of the focused field.
func (f *form) content() (string, int) {
	s := f.c.styles
	if f.state == formRegistering {
		return f.registeringContent(), 0
	}
	var b strings.Builder
	focusLine := 0
	b.WriteString(indentWrapped(viewOf(f.grantType()).about, 2, f.width, s.Subtle.Render) + "\n")
	for i := range formFields {
		if !f.shown(i) {
			continue
		}
		if i == f.focus && f.state == formEditing {
			focusLine = strings.Count(b.String(), "\n")
		}
		f.fieldRow(&b, i)
	}
	b.WriteString("\n")
	f.footer(&b)
	return b.String(), focusLine
}

// fieldRow is field i: its name (marked when focused) and value, and its
// error under them.
func (f *form) fieldRow(b *strings.Builder, i int) {
	s := f.c.styles
	spec := formFields[i]
	name := spec.label
	if spec.optional {
		name += " (opt.)"
	}
	marker, nameStyle := "  ", s.FieldName
	if i == f.focus && f.state == formEditing {
		marker, nameStyle = s.Focused.Render("› "), s.Focused
	}
	pad := 18 - len(name)
	b.WriteString(marker + nameStyle.Render(name) + strings.Repeat(" ", max(pad, 1)) + f.fieldValue(i) + "\n")
	if e := f.errs[i]; e != "" {
		b.WriteString(indentWrapped("✗ "+e, 20, f.width, s.Error.Render))
	}
}

// fieldValue is field i's value as it shows, by its kind.
func (f *form) fieldValue(i int) string {
	s := f.c.styles
	spec := formFields[i]
	switch spec.kind {
	case kindChoice:
		return f.choiceView(i)
	case kindSection:
		if f.on[i] {
			return s.Subtle.Render(spec.on)
		}
		return s.Subtle.Render(spec.off)
	case kindToggle:
		if f.on[i] {
			return "[x] " + s.Subtle.Render(spec.on)
		}
		return "[ ] " + s.Subtle.Render(spec.off)
	}
	return f.inputs[i].View()
}

// footer is the line under the fields: the request under way, what failed
// that belongs to no field, or how to submit.
func (f *form) footer(b *strings.Builder) {
	s := f.c.styles
	switch {
	case f.state == formSubmitting && viewOf(f.grantType()).waits:
		b.WriteString("  " + f.spinner() + " " + s.Subtle.Render("Starting the "+viewOf(f.grantType()).title+"…") + "\n")
	case f.state == formSubmitting:
		b.WriteString("  " + f.spinner() + " " + s.Subtle.Render("Requesting a token…"+waitingNote(f.wait.since, f.c.now)) + "\n")
	case f.general != "":
		b.WriteString(indentWrapped("✗ "+f.general, 2, f.width, s.Error.Render))
	default:
		b.WriteString(s.Subtle.Render("  enter or ctrl+s requests the token; nothing is stored unless it succeeds") + "\n")
	}
}

// registeringContent is the generated client key's public key set and
// where to register it.
func (f *form) registeringContent() string {
	s := f.c.styles
	var b strings.Builder
	b.WriteString(indentWrapped("A client key was made for this key (kept in the secrets store). Register its public key set with the client "+
		"(Keycloak: Clients → the client → Credentials: Client Authenticator \"Signed JWT\"; Keys → Use JWKS: paste it), then press enter.", 2, f.width, s.Subtle.Render))
	b.WriteString("\n")
	// Cut at the width, not at word breaks: a key set has no spaces, and
	// a hyphen inside "P-256" is no place to wrap.
	for _, l := range strings.Split(ansi.Hardwrap(f.jwks, max(f.width-2, 10), false), "\n") {
		b.WriteString("  " + s.Value.Render(l) + "\n")
	}
	b.WriteString("\n")
	b.WriteString(indentWrapped("c copies it; esc gives up (nothing is stored).", 2, f.width, s.Subtle.Render))
	return b.String()
}

// choiceView renders choice i: the value chosen between arrows, and where
// it stands among the others.
func (f *form) choiceView(i int) string {
	s := f.c.styles
	opts := formFields[i].options(f)
	v := f.chosen(i)
	name := formFields[i].title(v)
	if len(opts) < 2 {
		return s.Value.Render(name)
	}
	where := fmt.Sprintf("  %d of %d (←/→)", slices.Index(opts, v)+1, len(opts))
	if 20+lipgloss.Width(name)+4+len([]rune(where)) > f.width {
		where = "" // narrow: the choice alone
	}
	return s.Subtle.Render("‹ ") + s.Value.Render(name) + s.Subtle.Render(" ›"+where)
}

func (f *form) ShortHelp() []key.Binding {
	k := f.c.keys
	switch {
	case f.state == formSubmitting:
		return []key.Binding{k.Cancel, k.ForceQuit}
	case f.state == formRegistering:
		return []key.Binding{k.Registered, k.Copy, k.Cancel, k.ForceQuit}
	case !isText(f.focus):
		return []key.Binding{k.Choose, k.NextField, k.PrevField, k.Submit, k.Back, k.Advanced, k.ForceQuit}
	}
	return []key.Binding{k.NextField, k.PrevField, k.Submit, k.Back, k.Advanced, k.ForceQuit}
}

func (f *form) FullHelp() [][]key.Binding {
	k := f.c.keys
	if f.state == formRegistering {
		return [][]key.Binding{{k.Registered, k.Copy}, {k.Cancel, k.PageUp, k.PageDown}}
	}
	return [][]key.Binding{{k.NextField, k.PrevField, k.Choose, k.Advanced}, {k.Submit, k.Back, k.ForceQuit}}
}

// assertionFrom reads an assertion field: a file's path, or after a $ a
// command that prints the assertion (split at spaces, no shell, as
// --assertion-cmd), read or run again at every renewal.
func assertionFrom(v string) (file, cmd string) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(v), "$"); ok {
		return "", strings.TrimSpace(rest)
	}
	return v, ""
}
