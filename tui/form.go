package tui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// formState is the Get API Key flow: editing → submitting → done or failed
// (failed is editing again with the error shown beside its field).
type formState int

const (
	formEditing formState = iota
	formSubmitting
	formDone
)

// The fields of the Get API Key form, in order. Which show depends on the
// grant (grantViews) and on the advanced toggle.
const (
	fieldGrant = iota // a choice: how the key obtains tokens
	fieldAuthURL
	fieldRealm
	fieldClientID
	fieldClientSecret
	fieldUsername
	fieldPassword
	fieldLabel
	fieldScope
	fieldAdvanced // a toggle: shows the connection options below
	fieldTokenURL
	fieldIssuer
	fieldBasicAuth    // a toggle: HTTP Basic client authentication
	fieldPublic       // a toggle: a public client (no secret)
	fieldCallbackPort // browser sign-in's fixed loopback port
	fieldCount
)

var fieldNames = [fieldCount]string{"Grant", "Auth URL", "Realm", "Client ID", "Client Secret", "Username", "Password", "Label", "Scope",
	"Advanced", "Token URL", "Issuer", "HTTP Basic auth", "Public client", "Callback port"}

// isToggle reports whether field i is a toggle (Choose flips it), not text.
func isToggle(i int) bool { return i == fieldAdvanced || i == fieldBasicAuth || i == fieldPublic }

// isText reports whether field i takes text (not a toggle, not the grant).
func isText(i int) bool { return !isToggle(i) && i != fieldGrant }

// isAdvanced reports whether field i shows only with the advanced options.
func isAdvanced(i int) bool { return i > fieldAdvanced }

// form is the credentials walk-through ("Get API Key").
type form struct {
	c             *common
	width, height int
	wait          waitClock // how long the request has been in flight
	inputs        [fieldCount]textinput.Model
	focus         int
	state         formState
	errs          [fieldCount]string // inline errors, per field
	general       string             // an error that belongs to no field
	labels        map[string]bool    // labels in use, for the uniqueness check
	spinner       func() string      // the root's spinner frame
	advanced      bool               // the connection options are shown
	basicAuth     bool
	public        bool             // a public client: no secret
	grants        []auth.GrantType // what the grant field offers (auth.Grants)
	grant         int              // index in grants
	pane          pane
}

func newForm(c *common, spinner func() string, grants []auth.GrantType) *form {
	f := &form{c: c, spinner: spinner, labels: map[string]bool{}, pane: newPane(c), grants: grants}
	placeholders := [fieldCount]string{
		"", "https://auth.example.com", auth.DefaultRealm, "the registered client application",
		"client secret", "user of the client application", "password",
		"a name for this key", "optional, e.g. write", "",
		"optional: the token endpoint, overriding the realm's", "optional: an OIDC issuer (discovery)", "", "",
		"optional: the registered port of http://127.0.0.1:PORT/callback",
	}
	for i := range f.inputs {
		ti := c.styles.newTextInput("")
		ti.Placeholder = placeholders[i]
		ti.CharLimit = 2048
		if i == fieldClientSecret || i == fieldPassword {
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
// only from p), errors cleared, focus on the first empty field.
func (f *form) reset(p Prefill, labels []string) tea.Cmd {
	port := ""
	if p.CallbackPort > 0 {
		port = strconv.Itoa(p.CallbackPort)
	}
	vals := [fieldCount]string{"", p.AuthURL, p.Realm, p.ClientID, p.ClientSecret, p.Username, p.Password, p.Label, p.Scope,
		"", p.TokenURL, p.Issuer, "", "", port}
	f.basicAuth, f.public = p.BasicAuth, p.PublicClient
	f.advanced = p.TokenURL != "" || p.Issuer != "" || p.BasicAuth || p.PublicClient || p.CallbackPort > 0
	f.grant = max(0, slices.Index(f.grants, p.Grant.Or()))
	if vals[fieldRealm] == "" {
		vals[fieldRealm] = auth.DefaultRealm
	}
	for i := range f.inputs {
		f.inputs[i].SetValue(vals[i])
		f.inputs[i].CursorStart() // a field without focus shows its start
	}
	f.labels = map[string]bool{}
	for _, l := range labels {
		f.labels[l] = true
	}
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

// grantType is the grant chosen.
func (f *form) grantType() auth.GrantType {
	if len(f.grants) == 0 {
		return auth.GrantPassword
	}
	return f.grants[f.grant]
}

// isPublic reports whether the key is a public client: chosen, and the
// grant can be one.
func (f *form) isPublic() bool { return f.public && viewOf(f.grantType()).public }

// shown reports whether field i is on the form now: the grant needs it,
// and the advanced options are open when it is one of them.
func (f *form) shown(i int) bool { return f.relevant(i) && (!isAdvanced(i) || f.advanced) }

// relevant reports whether the chosen grant (and client kind) uses field i.
func (f *form) relevant(i int) bool {
	switch i {
	case fieldUsername, fieldPassword, fieldCallbackPort:
		return viewOf(f.grantType()).needs(i)
	case fieldClientSecret, fieldBasicAuth:
		return !f.isPublic()
	case fieldPublic:
		return viewOf(f.grantType()).public
	}
	return true
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
	if isAdvanced(f.focus) {
		f.advanced = true
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

// Capturing: a field always has focus while editing.
func (f *form) Capturing() bool { return f.state == formEditing }

// Typing: the focused field takes text (? is typed there, f1 opens help).
func (f *form) Typing() bool { return f.state == formEditing && isText(f.focus) }

func (f *form) Update(msg tea.Msg) (action, tea.Cmd) {
	if f.state != formEditing {
		if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, f.c.keys.Back) {
			if f.state == formSubmitting {
				return actCancelGrant{}, nil // the request is cancelled, the values stay
			}
			return actBack{}, nil
		}
		return nil, nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		km := f.c.keys
		switch {
		case key.Matches(k, km.Back):
			return actBack{}, nil
		case key.Matches(k, km.Submit), key.Matches(k, km.Enter):
			return f.submit()
		case key.Matches(k, km.NextField):
			return nil, f.step(+1)
		case key.Matches(k, km.PrevField):
			return nil, f.step(-1)
		case key.Matches(k, km.PageUp), key.Matches(k, km.PageDown):
			content, _ := f.content()
			f.pane.scroll(msg, f.c.keys, content, false)
			return nil, nil
		case !isText(f.focus):
			if key.Matches(k, km.Choose) {
				f.choose(k.String() == "left")
			}
			return nil, nil
		}
	}
	if _, ok := msg.(tea.MouseWheelMsg); ok {
		content, _ := f.content()
		f.pane.scroll(msg, f.c.keys, content, false)
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

// choose changes the focused choice: the next grant (back: the previous
// one), or flips a toggle. The fields shown change with it; what was typed
// in a field that hides is kept for when it shows again.
func (f *form) choose(back bool) {
	switch f.focus {
	case fieldGrant:
		if n := len(f.grants); n > 0 {
			step := 1
			if back {
				step = n - 1
			}
			f.grant = (f.grant + step) % n
		}
		f.errs = [fieldCount]string{}
		f.general = ""
	case fieldAdvanced:
		f.advanced = !f.advanced
	case fieldBasicAuth:
		f.basicAuth = !f.basicAuth
	case fieldPublic:
		f.public = !f.public
		f.errs[fieldClientSecret] = ""
	}
	f.follow()
}

// value returns a field's text, trimmed (secrets are taken verbatim).
func (f *form) value(i int) string {
	if i == fieldPassword || i == fieldClientSecret {
		return f.inputs[i].Value()
	}
	return strings.TrimSpace(f.inputs[i].Value())
}

// validate checks the fields before anything is sent; it returns the first
// field at fault, or -1.
func (f *form) validate() int {
	f.errs = [fieldCount]string{}
	f.general = ""
	tokenURL, issuer := f.value(fieldTokenURL), f.value(fieldIssuer)
	if !f.advanced {
		tokenURL, issuer = "", ""
	}
	switch u := f.value(fieldAuthURL); {
	case u == "" && tokenURL == "" && issuer == "":
		f.errs[fieldAuthURL] = "required"
	case u != "":
		if err := auth.CheckURL(u); err != nil {
			f.errs[fieldAuthURL] = "URL " + err.Error()
		}
	}
	for _, i := range []int{fieldTokenURL, fieldIssuer} {
		if u := f.value(i); f.advanced && u != "" {
			if err := auth.CheckURL(u); err != nil {
				f.errs[i] = "URL " + err.Error()
			}
		}
	}
	if tokenURL != "" && issuer != "" {
		f.errs[fieldIssuer] = "give a token URL or an issuer, not both"
	}
	for _, i := range []int{fieldClientID, fieldClientSecret, fieldUsername, fieldPassword, fieldLabel} {
		if f.shown(i) && f.value(i) == "" {
			f.errs[i] = "required"
		}
	}
	if p := f.value(fieldCallbackPort); f.shown(fieldCallbackPort) && p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			f.errs[fieldCallbackPort] = "a TCP port, 1 to 65535 (empty: any free port)"
		}
	}
	if l := f.value(fieldLabel); l != "" {
		switch {
		case text.Safe(l) != l:
			f.errs[fieldLabel] = "must not contain control characters"
		case f.labels[l]:
			f.errs[fieldLabel] = "a key with this label exists; pick another"
		}
	}
	for i := range f.errs {
		if f.errs[i] != "" {
			return i
		}
	}
	return -1
}

func (f *form) submit() (action, tea.Cmd) {
	if bad := f.validate(); bad >= 0 {
		return nil, f.focusOn(bad)
	}
	realm := f.value(fieldRealm)
	if realm == "" {
		realm = auth.DefaultRealm
	}
	nk := store.NewKey{Label: f.value(fieldLabel), Definition: store.Definition{Connection: auth.Connection{
		AuthURL:  strings.TrimRight(f.value(fieldAuthURL), "/"),
		Realm:    realm,
		ClientID: f.value(fieldClientID),
		Scopes:   strings.Fields(f.value(fieldScope)),
	}, Grant: f.grantType()}}
	// Only the fields shown are sent: a secret typed before the person
	// chose a public client, or a password before client credentials, is
	// not.
	if f.shown(fieldClientSecret) {
		nk.ClientSecret = f.value(fieldClientSecret)
	}
	if f.shown(fieldUsername) {
		nk.Username, nk.Password = f.value(fieldUsername), f.value(fieldPassword)
	}
	if f.advanced {
		nk.Connection.TokenURL = f.value(fieldTokenURL)
		nk.Connection.Issuer = f.value(fieldIssuer)
		switch {
		case f.isPublic():
			nk.Connection.ClientAuth = auth.ClientAuthNone
		case f.basicAuth && f.shown(fieldBasicAuth):
			nk.Connection.ClientAuth = auth.ClientSecretBasic
		}
		if f.shown(fieldCallbackPort) {
			nk.CallbackPort, _ = strconv.Atoi(f.value(fieldCallbackPort)) // validated
		}
	}
	f.state = formSubmitting
	for j := range f.inputs {
		f.inputs[j].Blur()
	}
	return actSubmitKey{nk: nk}, nil
}

// fail returns the form to editing with every value kept, the field at
// fault focused and the error beside it.
func (f *form) fail(err error) tea.Cmd {
	f.state = formEditing
	field := faultField(err)
	msg := text.Safe(err.Error())
	if field < 0 || !f.relevant(field) { // the grant has no such field: said below the form
		f.general = msg
		return f.focusOn(f.focus)
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
	if errors.Is(err, store.ErrLabelTaken) {
		return fieldLabel
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
	var b strings.Builder
	focusLine := 0
	b.WriteString(indentWrapped(viewOf(f.grantType()).about, 2, f.width, s.Subtle.Render) + "\n")
	for i := range f.inputs {
		if !f.shown(i) {
			continue
		}
		name := fieldNames[i]
		if i == fieldScope {
			name += " (opt.)"
		}
		marker := "  "
		nameStyle := s.FieldName
		if i == f.focus && f.state == formEditing {
			marker = s.Focused.Render("› ")
			nameStyle = s.Focused
			focusLine = strings.Count(b.String(), "\n")
		}
		pad := 18 - len(name)
		val := f.inputs[i].View()
		switch i {
		case fieldGrant:
			val = f.grantChoice()
		case fieldAdvanced:
			val = s.Subtle.Render("▸ token URL, issuer, client options (space shows)")
			if f.advanced {
				val = s.Subtle.Render("▾ (space hides)")
			}
		case fieldBasicAuth:
			val = "[ ] " + s.Subtle.Render("client credentials in the form body (space toggles)")
			if f.basicAuth {
				val = "[x] " + s.Subtle.Render("client credentials by HTTP Basic (space toggles)")
			}
		case fieldPublic:
			val = "[ ] " + s.Subtle.Render("has a secret (space toggles)")
			if f.public {
				val = "[x] " + s.Subtle.Render("no secret (space toggles)")
			}
		}
		line := marker + nameStyle.Render(name) + strings.Repeat(" ", max(pad, 1)) + val
		b.WriteString(line + "\n")
		if e := f.errs[i]; e != "" {
			b.WriteString(indentWrapped("✗ "+e, 20, f.width, s.Error.Render))
		}
	}
	b.WriteString("\n")
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
	return b.String(), focusLine
}

// grantChoice renders the grant field: the chosen grant between arrows,
// and where it stands among the others.
func (f *form) grantChoice() string {
	s := f.c.styles
	name := viewOf(f.grantType()).title
	if len(f.grants) < 2 {
		return s.Value.Render(name)
	}
	where := fmt.Sprintf("  %d of %d (←/→)", f.grant+1, len(f.grants))
	if 20+lipgloss.Width(name)+4+len([]rune(where)) > f.width {
		where = "" // narrow: the choice alone
	}
	return s.Subtle.Render("‹ ") + s.Value.Render(name) + s.Subtle.Render(" ›"+where)
}

func (f *form) ShortHelp() []key.Binding {
	k := f.c.keys
	if f.state == formSubmitting {
		return []key.Binding{k.Cancel, k.ForceQuit}
	}
	if !isText(f.focus) {
		return []key.Binding{k.Choose, k.NextField, k.PrevField, k.Submit, k.Back, k.ForceQuit}
	}
	return []key.Binding{k.NextField, k.PrevField, k.Submit, k.Back, k.ForceQuit}
}

func (f *form) FullHelp() [][]key.Binding {
	k := f.c.keys
	return [][]key.Binding{{k.NextField, k.PrevField, k.Choose}, {k.Submit, k.Back, k.ForceQuit}}
}
