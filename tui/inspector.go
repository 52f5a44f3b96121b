package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
)

// inspectorMode is what the claims inspector is doing.
type inspectorMode int

const (
	inspectViewing inspectorMode = iota
	inspectPasting               // the paste field has focus
)

// inspected is one token under inspection.
type inspected struct {
	title     string // "Access token", "Refresh token", "Pasted token"
	raw       string
	dec       *auth.Decoded
	decodeErr string
	ver       auth.Verification
	verifying bool
}

// inspector shows the claims of one or more tokens, scrollable.
type inspector struct {
	c             *common
	width, height int
	mode          inspectorMode
	source        string // "key demo" or "pasted"
	tokens        []inspected
	seq           int // tags the verifications of the current tokens
	vp            viewport.Model
	paste         textinput.Model
	errMsg        string
	spinner       func() string
}

func newInspector(c *common, spinner func() string) *inspector {
	in := &inspector{c: c, spinner: spinner}
	in.vp = viewport.New()
	in.vp.MouseWheelEnabled = true
	in.paste = c.styles.newTextInput("token › ")
	in.paste.Placeholder = "paste a JWT (or any token) and press enter"
	in.paste.CharLimit = 64 << 10
	return in
}

func (in *inspector) restyle() { in.paste.SetStyles(in.c.styles.TextInput); in.render() }

func (in *inspector) SetSize(width, height int) {
	in.width, in.height = width, height
	in.vp.SetWidth(max(1, width))
	in.vp.SetHeight(max(1, height-1))
	in.paste.SetWidth(max(10, width-12))
	in.render()
}

func (in *inspector) Capturing() bool { return in.mode == inspectPasting }

// startPaste switches to the paste field.
func (in *inspector) startPaste() tea.Cmd {
	in.mode = inspectPasting
	in.errMsg = ""
	in.paste.SetValue("")
	return in.paste.Focus()
}

// token is one token to load: a title and the raw text.
type token struct{ title, raw string }

// load decodes toks (pure computation) and returns the indexes of the JWTs
// whose signature should be checked. seq tags the verifications.
func (in *inspector) load(source string, toks []token, now time.Time, seq int) []int {
	in.source, in.seq = source, seq
	in.tokens = in.tokens[:0]
	in.mode = inspectViewing
	in.paste.Blur()
	var verify []int
	for _, t := range toks {
		if t.raw == "" {
			continue
		}
		it := inspected{title: t.title, raw: t.raw}
		dec, err := auth.Decode(t.raw, now)
		switch {
		case err != nil:
			it.decodeErr = auth.Sanitize(err.Error())
		case dec.Format == auth.FormatJWT:
			it.dec = dec
			it.verifying = true
			verify = append(verify, len(in.tokens))
		default:
			it.dec = dec
		}
		in.tokens = append(in.tokens, it)
	}
	in.vp.GotoTop()
	in.render()
	return verify
}

// verified records a signature check; stale ones are dropped.
func (in *inspector) verified(msg verifiedMsg) {
	if msg.seq != in.seq || msg.which < 0 || msg.which >= len(in.tokens) {
		return
	}
	in.tokens[msg.which].ver = msg.v
	in.tokens[msg.which].verifying = false
	in.render()
}

// busy reports whether a verification is running.
func (in *inspector) busy() bool {
	for _, t := range in.tokens {
		if t.verifying {
			return true
		}
	}
	return false
}

func (in *inspector) Update(msg tea.Msg) (action, tea.Cmd) {
	if in.mode == inspectPasting {
		if k, ok := msg.(tea.KeyPressMsg); ok {
			switch {
			case key.Matches(k, in.c.keys.Back):
				in.mode = inspectViewing
				in.paste.Blur()
				if len(in.tokens) == 0 {
					return actBack{}, nil
				}
				return nil, nil
			case key.Matches(k, in.c.keys.Enter):
				raw := strings.TrimSpace(in.paste.Value())
				raw = strings.TrimPrefix(strings.TrimPrefix(raw, "Authorization: "), "Bearer ")
				if raw == "" {
					in.errMsg = "paste a token first"
					return nil, nil
				}
				in.paste.SetValue("")
				return actInspectToken{raw: raw}, nil
			}
		}
		var cmd tea.Cmd
		in.paste, cmd = in.paste.Update(msg)
		return nil, cmd
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, in.c.keys.Back):
			return actBack{}, nil
		case key.Matches(k, in.c.keys.Paste):
			return nil, in.startPaste()
		}
	}
	var cmd tea.Cmd
	in.vp, cmd = in.vp.Update(msg)
	return nil, cmd
}

// render rebuilds the viewport content; called when the tokens, their
// verification or the size change (not on every frame).
func (in *inspector) render() {
	s := in.c.styles
	var b strings.Builder
	for i, t := range in.tokens {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.Section.Render(t.title) + "\n")
		switch {
		case t.decodeErr != "":
			b.WriteString(s.Error.Render("  cannot decode: "+t.decodeErr) + "\n")
			continue
		case t.dec == nil || t.dec.Format != auth.FormatJWT:
			b.WriteString(s.Subtle.Render("  not a JWT: an opaque token has no claims to show ("+auth.Mask(t.raw)+")") + "\n")
			continue
		}
		b.WriteString(s.Subtle.Render("  header") + "\n")
		in.claims(&b, t.dec.Header)
		b.WriteString(s.Subtle.Render("  payload") + "\n")
		in.claims(&b, t.dec.Payload)
		b.WriteString("  " + s.FieldName.Render("signature") + "  " + in.signature(t) + "\n")
	}
	if len(in.tokens) == 0 {
		b.WriteString(s.Subtle.Render("No token to inspect: press p to paste one.") + "\n")
	}
	in.vp.SetContent(b.String())
}

// claims writes name: value lines, aligned, coloured by kind.
func (in *inspector) claims(b *strings.Builder, cs []auth.Claim) {
	s := in.c.styles
	w := 0
	for _, c := range cs {
		w = max(w, len([]rune(auth.Sanitize(c.Name))))
	}
	w = min(w, 32)
	for _, c := range cs {
		name := auth.Sanitize(c.Name)
		pad := strings.Repeat(" ", max(1, w-len([]rune(name))+2))
		var val string
		switch c.Kind {
		case auth.ClaimTime:
			val = s.ClaimTime.Render(auth.Sanitize(c.Display))
		case auth.ClaimList, auth.ClaimRoles:
			items := make([]string, len(c.Items))
			for i, it := range c.Items {
				items[i] = auth.Sanitize(it)
			}
			val = s.ClaimList.Render(strings.Join(items, ", "))
			if len(items) == 0 {
				val = s.Subtle.Render("(none)")
			}
		default:
			val = s.Value.Render(auth.Sanitize(c.Display))
		}
		b.WriteString("    " + s.ClaimName.Render(name) + pad + val + "\n")
	}
}

// signature says the signature state in words.
func (in *inspector) signature(t inspected) string {
	s := in.c.styles
	if t.verifying {
		return in.spinner() + s.Subtle.Render(" checking…")
	}
	v := t.ver
	text := v.State.String()
	detail := ""
	if v.KeyID != "" {
		detail += " (key " + auth.Sanitize(v.KeyID) + ")"
	}
	if v.Reason != "" {
		detail += ": " + auth.Sanitize(v.Reason)
	}
	switch v.State {
	case auth.SigVerified:
		return s.OK.Render(text) + s.Subtle.Render(detail)
	case auth.SigFailed:
		return s.Error.Render(text) + s.Subtle.Render(detail)
	default:
		return s.Warn.Render(text) + s.Subtle.Render(detail)
	}
}

func (in *inspector) View() string {
	s := in.c.styles
	var top string
	switch {
	case in.mode == inspectPasting:
		top = in.paste.View()
	case in.errMsg != "":
		top = s.Error.Render("✗ " + in.errMsg)
	default:
		src := in.source
		if src == "" {
			src = "no token"
		}
		top = s.Subtle.Render("Source: " + auth.Sanitize(src) + "  ·  p pastes another token")
	}
	return fitBlock(top+"\n"+in.vp.View(), in.width, in.height)
}

func (in *inspector) ShortHelp() []key.Binding {
	k := in.c.keys
	if in.mode == inspectPasting {
		return []key.Binding{k.Enter, k.Back, k.ForceQuit}
	}
	return []key.Binding{k.ScrollUp, k.ScrollDown, k.Paste, k.Back, k.Help, k.Quit}
}

func (in *inspector) FullHelp() [][]key.Binding {
	k := in.c.keys
	return [][]key.Binding{{k.ScrollUp, k.ScrollDown}, {k.Paste, k.Back}}
}
