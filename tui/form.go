package tui

import (
	"errors"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
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

// The fields of the Get API Key form, in order.
const (
	fieldAuthURL = iota
	fieldRealm
	fieldClientID
	fieldClientSecret
	fieldUsername
	fieldPassword
	fieldLabel
	fieldScope
	fieldCount
)

var fieldNames = [fieldCount]string{"Auth URL", "Realm", "Client ID", "Client Secret", "Username", "Password", "Label", "Scope"}

// form is the credentials walk-through ("Get API Key").
type form struct {
	c             *common
	width, height int
	inputs        [fieldCount]textinput.Model
	focus         int
	state         formState
	errs          [fieldCount]string // inline errors, per field
	general       string             // an error that belongs to no field
	labels        map[string]bool    // labels in use, for the uniqueness check
	spinner       func() string      // the root's spinner frame
}

func newForm(c *common, spinner func() string) *form {
	f := &form{c: c, spinner: spinner, labels: map[string]bool{}}
	placeholders := [fieldCount]string{
		"https://auth.example.com", auth.DefaultRealm, "the registered client application",
		"client secret", "user of the client application", "password",
		"a name for this key", "optional, e.g. write",
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
	vals := [fieldCount]string{p.AuthURL, p.Realm, p.ClientID, p.ClientSecret, p.Username, p.Password, p.Label, p.Scope}
	if vals[fieldRealm] == "" {
		vals[fieldRealm] = auth.DefaultRealm
	}
	for i := range f.inputs {
		f.inputs[i].SetValue(vals[i])
		f.inputs[i].CursorEnd()
	}
	f.labels = map[string]bool{}
	for _, l := range labels {
		f.labels[l] = true
	}
	f.errs = [fieldCount]string{}
	f.general = ""
	f.state = formEditing
	first := 0
	for i := range f.inputs {
		if f.inputs[i].Value() == "" && i != fieldScope {
			first = i
			break
		}
	}
	return f.focusOn(first)
}

func (f *form) focusOn(i int) tea.Cmd {
	for j := range f.inputs {
		f.inputs[j].Blur()
	}
	f.focus = (i + fieldCount) % fieldCount
	return f.inputs[f.focus].Focus()
}

func (f *form) SetSize(width, height int) {
	f.width, f.height = width, height
	w := width - 22
	if w > 70 {
		w = 70
	}
	if w < 10 {
		w = 10
	}
	for i := range f.inputs {
		f.inputs[i].SetWidth(w)
	}
}

// Capturing: a field always has focus while editing.
func (f *form) Capturing() bool { return f.state == formEditing }

func (f *form) Update(msg tea.Msg) (action, tea.Cmd) {
	if f.state != formEditing {
		if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, f.c.keys.Back) && f.state != formSubmitting {
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
			return nil, f.focusOn(f.focus + 1)
		case key.Matches(k, km.PrevField):
			return nil, f.focusOn(f.focus - 1)
		}
	}
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	if _, ok := msg.(tea.KeyPressMsg); ok {
		f.errs[f.focus] = ""
	}
	return nil, cmd
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
	if u := f.value(fieldAuthURL); u == "" {
		f.errs[fieldAuthURL] = "required"
	} else if err := auth.CheckURL(u); err != nil {
		f.errs[fieldAuthURL] = "URL " + err.Error()
	}
	for _, i := range []int{fieldClientID, fieldClientSecret, fieldUsername, fieldPassword, fieldLabel} {
		if f.value(i) == "" {
			f.errs[i] = "required"
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
	nk := store.NewKey{
		Label: f.value(fieldLabel),
		Conn: auth.Connection{
			AuthURL:  strings.TrimRight(f.value(fieldAuthURL), "/"),
			Realm:    realm,
			ClientID: f.value(fieldClientID),
			Scopes:   strings.Fields(f.value(fieldScope)),
		},
		Username:     f.value(fieldUsername),
		ClientSecret: f.value(fieldClientSecret),
		Password:     f.value(fieldPassword),
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
	if field < 0 {
		f.general = msg
		return f.focusOn(f.focus)
	}
	f.errs[field] = msg
	return f.focusOn(field)
}

// faultField maps a failure to the form field that must change, or -1.
func faultField(err error) int {
	if errors.Is(err, store.ErrLabelTaken) {
		return fieldLabel
	}
	switch auth.KindOf(err) {
	case auth.KindInvalidCredentials:
		return fieldPassword
	case auth.KindInvalidClient:
		return fieldClientSecret
	case auth.KindDirectGrantDisabled:
		return fieldClientID
	case auth.KindInvalidScope:
		return fieldScope
	case auth.KindAccountDisabled, auth.KindAccountNotSetUp:
		return fieldUsername
	case auth.KindNetwork, auth.KindTimeout, auth.KindTLS, auth.KindConfig, auth.KindMalformedResponse:
		return fieldAuthURL
	}
	return -1
}

func (f *form) View() string {
	s := f.c.styles
	var b strings.Builder
	b.WriteString(s.Subtle.Render("  The password grant against a Keycloak realm: client and user credentials.") + "\n\n")
	for i := range f.inputs {
		name := fieldNames[i]
		if i == fieldScope {
			name += " (opt.)"
		}
		marker := "  "
		nameStyle := s.FieldName
		if i == f.focus && f.state == formEditing {
			marker = s.Focused.Render("› ")
			nameStyle = s.Focused
		}
		pad := 18 - len(name)
		line := marker + nameStyle.Render(name) + strings.Repeat(" ", max(pad, 1)) + f.inputs[i].View()
		b.WriteString(line + "\n")
		if e := f.errs[i]; e != "" {
			b.WriteString(indentWrapped("✗ "+e, 20, f.width, s.Error.Render))
		}
	}
	b.WriteString("\n")
	switch {
	case f.state == formSubmitting:
		b.WriteString("  " + f.spinner() + " " + s.Subtle.Render("Requesting a token…") + "\n")
	case f.general != "":
		b.WriteString(indentWrapped("✗ "+f.general, 2, f.width, s.Error.Render))
	default:
		b.WriteString(s.Subtle.Render("  enter or ctrl+s requests the token; nothing is stored unless it succeeds") + "\n")
	}
	return fitBlock(b.String(), f.width, f.height)
}

func (f *form) ShortHelp() []key.Binding {
	k := f.c.keys
	return []key.Binding{k.NextField, k.PrevField, k.Submit, k.Back, k.ForceQuit}
}

func (f *form) FullHelp() [][]key.Binding {
	k := f.c.keys
	return [][]key.Binding{{k.NextField, k.PrevField}, {k.Submit, k.Back, k.ForceQuit}}
}
