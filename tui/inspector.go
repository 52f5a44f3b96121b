package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// inspectorMode is what the claims inspector is doing.
type inspectorMode int

const (
	inspectViewing inspectorMode = iota
	inspectPasting               // the paste field has focus
	inspectJWKS                  // the JWKS URL field has focus
)

// inspected is one token under inspection.
type inspected struct {
	title     string // "Access token", "Refresh token", "Pasted token"
	raw       string
	dec       *auth.Decoded
	decodeErr text.Clean
	ver       auth.Verification
	verifying bool
	// ownJKT and ownX5T are the key's DPoP key and client certificate
	// thumbprints, to say whether a bound token's cnf is the key's own.
	ownJKT, ownX5T string
	// dpop: a DPoP key's access token, bound to its DPoP key whether or
	// not it is a JWT (an opaque token's binding is the server's record).
	dpop bool
}

// inspector shows the claims of one or more tokens, scrollable.
type inspector struct {
	c             *common
	lines         map[string]string // rendered claims (claimLines)
	width, height int
	mode          inspectorMode
	source        string // "key demo" or "pasted"
	tokens        []inspected
	seq           int // tags the verifications of the current tokens
	vp            viewport.Model
	paste         pasteField
	jwksField     textinput.Model
	// jwks is the URL of the key set the signatures are checked against
	// (w); "" for the realms of the store's connections. A key's tokens
	// clear it; pasted tokens keep it (the same foreign issuer's, often).
	jwks    string
	errMsg  string
	sum     []string // the summary lines above the viewport (see summarize)
	decodes int      // tokens decoded (the paste tests count them)
	spinner func() string
}

func newInspector(c *common, spinner func() string) *inspector {
	in := &inspector{c: c, spinner: spinner}
	in.vp = viewport.New()
	in.vp.MouseWheelEnabled = true
	in.paste = newPasteField(c, "token › ", "paste a JWT (or any token) and press enter")
	in.jwksField = c.styles.newTextInput("JWKS URL › ")
	in.jwksField.Placeholder = "https://…/protocol/openid-connect/certs (empty: the realm's keys)"
	in.jwksField.CharLimit = 2048
	return in
}

func (in *inspector) restyle() {
	in.jwksField.SetStyles(in.c.styles.TextInput)
	clear(in.lines)
	in.render()
}

func (in *inspector) SetSize(width, height int) {
	in.width, in.height = width, height
	in.vp.SetWidth(max(1, width))
	in.paste.SetWidth(max(10, width-12))
	in.jwksField.SetWidth(max(10, width-16))
	in.render()
}

func (in *inspector) Capturing() bool { return in.mode != inspectViewing }

// startPaste switches to the paste field.
func (in *inspector) startPaste() tea.Cmd {
	in.mode = inspectPasting
	in.errMsg = ""
	in.paste.SetValue("")
	in.paste.Focus()
	return nil
}

// token is one token to load: a title and the raw text, and for a key's
// tokens the thumbprints of its DPoP key and client certificate.
type token struct {
	title, raw, jkt, x5t string
	dpop                 bool
}

// load decodes toks (pure computation) and returns the indexes of the JWTs
// whose signature should be checked. seq tags the verifications.
func (in *inspector) load(source string, toks []token, now time.Time, seq int) []int {
	in.source, in.seq = source, seq
	in.tokens = in.tokens[:0]
	in.mode = inspectViewing
	in.paste.Blur()
	if source != pastedSource {
		in.jwks = ""
	}
	var verify []int
	for _, t := range toks {
		if t.raw == "" {
			continue
		}
		it := inspected{title: t.title, raw: t.raw, ownJKT: t.jkt, ownX5T: t.x5t, dpop: t.dpop}
		it.decode(now)
		in.decodes++
		if it.dec != nil && it.dec.Format == auth.FormatJWT {
			it.verifying = true
			verify = append(verify, len(in.tokens))
		}
		in.tokens = append(in.tokens, it)
	}
	in.vp.GotoTop()
	in.render()
	return verify
}

// pastedSource is the inspector's source for a pasted token.
const pastedSource = "pasted token"

// pastedLiveness is the server row of a pasted token: whether the server
// still accepts a token is asked with its key's client (the s of its token
// details; `inspect --verify --key` on the command line).
const pastedLiveness = "not asked: whether the server still accepts it needs its key (s on its token details)"

// reverify marks the JWTs as being checked again under seq and returns
// their indexes.
func (in *inspector) reverify(seq int) []int {
	in.seq = seq
	var out []int
	for i := range in.tokens {
		if t := &in.tokens[i]; t.dec != nil && t.dec.Format == auth.FormatJWT {
			t.verifying, t.ver = true, auth.Verification{}
			out = append(out, i)
		}
	}
	in.render()
	return out
}

// updateJWKS handles the JWKS URL field: enter checks the signatures
// against the key set at the URL (empty: the realms' keys again), esc
// leaves it as it was.
func (in *inspector) updateJWKS(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, in.c.keys.Back):
			in.mode = inspectViewing
			in.jwksField.Blur()
			return nil, nil
		case key.Matches(k, in.c.keys.Enter):
			u := strings.TrimSpace(in.jwksField.Value())
			if u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
				in.errMsg = "a JWKS URL starts with https:// (or http://); esc keeps the keys as they were"
				return nil, nil
			}
			in.jwks, in.errMsg = u, ""
			in.mode = inspectViewing
			in.jwksField.Blur()
			return actVerifyJWKS{}, nil
		}
	}
	var cmd tea.Cmd
	in.jwksField, cmd = in.jwksField.Update(msg)
	return nil, cmd
}

// decode decodes the token as of now (the claims' relative times).
func (it *inspected) decode(now time.Time) {
	it.dec, it.decodeErr = nil, text.Clean{}
	dec, err := auth.Decode(it.raw, now)
	if err != nil {
		it.decodeErr = text.Sanitize(err.Error())
		return
	}
	it.dec = dec
}

// retime redraws the claims' relative times ("in 4m") as of now: the
// inspector ticks like the countdowns while it is shown.
func (in *inspector) retime(now time.Time) {
	if len(in.tokens) == 0 {
		return
	}
	for i := range in.tokens {
		in.tokens[i].decode(now)
	}
	in.decodes += len(in.tokens)
	in.render()
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

// Update dispatches by mode: the JWKS URL field, the paste field, else the
// tokens shown (a paste lands in the paste field from there too).
func (in *inspector) Update(msg tea.Msg) (action, tea.Cmd) {
	switch in.mode {
	case inspectJWKS:
		return in.updateJWKS(msg)
	case inspectPasting:
		return in.updatePasting(msg)
	}
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if act, cmd, done := in.viewingKey(msg); done {
			return act, cmd
		}
	case tea.PasteMsg:
		// A paste needs no p first: it lands in the paste field, for
		// enter to inspect.
		in.startPaste()
		in.paste.Update(msg)
		return nil, nil
	}
	var cmd tea.Cmd
	in.vp, cmd = in.vp.Update(msg)
	return nil, cmd
}

// updatePasting handles the paste field: enter inspects what was pasted,
// esc closes the field (and the screen, with no token shown).
func (in *inspector) updatePasting(msg tea.Msg) (action, tea.Cmd) {
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
			raw := pastedToken(in.paste.Value())
			if raw == "" {
				in.errMsg = "paste a token first"
				return nil, nil
			}
			in.paste.SetValue("")
			return actInspectToken{raw: raw}, nil
		}
	}
	in.paste.Update(msg)
	return nil, nil
}

// viewingKey handles the keys of the tokens shown: back, paste, the JWKS
// URL field, top and bottom. done is false for any other key: it scrolls.
func (in *inspector) viewingKey(k tea.KeyPressMsg) (act action, cmd tea.Cmd, done bool) {
	km := in.c.keys
	switch {
	case key.Matches(k, km.Back):
		return actBack{}, nil, true
	case key.Matches(k, km.Paste):
		return nil, in.startPaste(), true
	case key.Matches(k, km.JWKS) && len(in.tokens) > 0:
		in.mode, in.errMsg = inspectJWKS, ""
		in.jwksField.SetValue(in.jwks)
		in.jwksField.CursorEnd()
		return nil, in.jwksField.Focus(), true
	case key.Matches(k, km.Top):
		in.vp.GotoTop()
		return nil, nil, true
	case key.Matches(k, km.Bottom):
		in.vp.GotoBottom()
		return nil, nil, true
	}
	return nil, nil, false
}

// pastedToken finds the token in pasted text: surrounding whitespace and
// quotes, an "Authorization:" header name and the "Bearer" scheme (any
// case) go; whitespace inside is dropped, since a token has none and a
// terminal may have wrapped it over lines (the paste field turns newlines
// into spaces).
func pastedToken(s string) string {
	f := strings.Fields(strings.Trim(strings.TrimSpace(s), `"'`))
	if len(f) > 0 && strings.EqualFold(f[0], "Authorization:") {
		f = f[1:]
	} else if len(f) > 0 && len(f[0]) > len("Authorization:") && strings.EqualFold(f[0][:len("Authorization:")], "Authorization:") {
		f[0] = f[0][len("Authorization:"):] // "Authorization:Bearer"
	}
	if len(f) > 1 && strings.EqualFold(f[0], "Bearer") {
		f = f[1:]
	}
	return strings.Trim(strings.Join(f, ""), `"'`)
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
		b.WriteString("  " + s.Section.Render(t.title) + "\n")
		in.tokenBody(&b, &in.tokens[i])
	}
	if in.source == pastedSource && len(in.tokens) == 1 && in.tokens[0].decodeErr.IsEmpty() {
		// Where a key's liveness row would be: the server is asked only
		// about a key's token (as `inspect --verify` without --key says).
		in.field(&b, "server", pastedLiveness, func(l string) string { return s.Subtle.Render(l) })
	}
	if len(in.tokens) == 0 {
		b.WriteString("  " + s.Subtle.Render("No token to inspect: press p to paste one.") + "\n")
	}
	in.vp.SetContent(b.String())
	in.sum = in.summarize()
	for i := range in.sum {
		in.sum[i] = "  " + in.sum[i]
	}
	in.vp.SetHeight(max(1, in.height-1-len(in.sum))) // under the source and summary lines
}

// tokenBody writes what t is under its title: why it cannot be decoded,
// that it is opaque, or a JWT's header, payload and signature.
func (in *inspector) tokenBody(b *strings.Builder, t *inspected) {
	s := in.c.styles
	switch {
	case !t.decodeErr.IsEmpty():
		b.WriteString(show(s.Error, text.Concat(text.Trusted("    cannot decode: "), t.decodeErr)) + "\n")
		return
	case t.dec == nil || t.dec.Format != auth.FormatJWT:
		b.WriteString(s.Subtle.Render("    not a JWT: an opaque token has no claims to show ("+text.Mask(t.raw)+")") + "\n")
		if t.dpop {
			b.WriteString(indentWrapped(opaqueDPoP, 4, in.width, s.Value.Render))
		}
		return
	}
	b.WriteString(s.Subtle.Render("    header") + "\n")
	in.claims(b, t.dec.Header)
	b.WriteString(s.Subtle.Render("    payload") + "\n")
	in.claims(b, t.dec.Payload)
	in.field(b, "signature", in.signature(*t), func(l string) string { return l })
}

// fieldIndent is where a field's value starts: "    name" padded to it.
const fieldIndent = 15

// field writes name and its value wrapped to the width beside it, each
// line of the value through style, the lines after the first under it.
func (in *inspector) field(b *strings.Builder, name, value string, style func(string) string) {
	for i, l := range strings.Split(ansi.Wrap(value, max(16, in.width-fieldIndent), ""), "\n") {
		if i == 0 {
			b.WriteString("    " + in.c.styles.FieldName.Render(name) + strings.Repeat(" ", fieldIndent-4-len(name)) + style(l) + "\n")
		} else {
			b.WriteString(strings.Repeat(" ", fieldIndent) + style(l) + "\n")
		}
	}
}

// claims writes name: value lines, aligned, coloured by kind.
func (in *inspector) claims(b *strings.Builder, cs []auth.Claim) {
	w := 0
	for _, c := range cs {
		w = max(w, len([]rune(c.Name.String())))
	}
	// At most a quarter of the width: at 80 columns, room for
	// "preferred_username" and no wider.
	w = min(w, max(12, in.width/4))
	for _, c := range cs {
		b.WriteString(in.claimLines(c, w))
	}
}

// claimLines renders one claim with its name padded to w. A claim's lines
// are kept while its text stays (the inspector renders again every second
// for the few claims whose relative time moves).
func (in *inspector) claimLines(c auth.Claim, w int) string {
	key := fmt.Sprintf("%d\x00%d\x00%d\x00%s\x00%s\x00%q", w, in.width, c.Kind, c.Name, c.Display, c.Items)
	if l, ok := in.lines[key]; ok {
		return l
	}
	s := in.c.styles
	var b strings.Builder
	name := c.Name.String()
	pad := strings.Repeat(" ", max(1, w-len([]rune(name))+2))
	var val string
	switch c.Kind {
	case auth.ClaimTime:
		val = show(s.ClaimTime, c.Display)
	case auth.ClaimList, auth.ClaimRoles:
		val = show(s.ClaimList, text.Join(c.Items, text.Trusted(", ")))
		if len(c.Items) == 0 {
			val = s.Subtle.Render("(none)")
		}
	default:
		val = show(s.Value, c.Display)
	}
	// Long values wrap under themselves rather than off the edge; an
	// address (iss, aud) between the pieces of its path, never in a word.
	valW := in.width - 6 - lipgloss.Width(name) - len(pad)
	// Its lines leave room for "↑ more"/"↓ more" (markMore) at their end;
	// one whose host does not fit beside the name goes under it.
	if plain := c.Display.String(); c.Kind == auth.ClaimText && isURL(plain) && lipgloss.Width(plain) > valW {
		room := valW - lipgloss.Width(moreAbove) - 1
		indent, under := strings.Repeat(" ", in.width-valW), false
		if lipgloss.Width(urlHead(plain)) > room {
			b.WriteString("      " + s.ClaimName.Render(name) + "\n")
			room = in.width - 8 - lipgloss.Width(moreAbove) - 1
			indent, under = "        ", true
		}
		for i, l := range urlWrap(plain, max(16, room)) {
			if i == 0 && !under {
				b.WriteString("      " + s.ClaimName.Render(name) + pad + s.Value.Render(l) + "\n")
			} else {
				b.WriteString(indent + s.Value.Render(l) + "\n")
			}
		}
		return in.keep(key, b.String())
	}
	for i, l := range strings.Split(ansi.Wrap(val, max(16, valW), ", "), "\n") {
		if i == 0 {
			b.WriteString("      " + s.ClaimName.Render(name) + pad + l + "\n")
		} else {
			b.WriteString(strings.Repeat(" ", max(0, in.width-max(16, valW))) + l + "\n")
		}
	}
	return in.keep(key, b.String())
}

// keep remembers a claim's rendered lines under key and returns them.
func (in *inspector) keep(key, lines string) string {
	if in.lines == nil || len(in.lines) > 256 {
		in.lines = map[string]string{}
	}
	in.lines[key] = lines
	return lines
}

// signature says the signature state in words.
func (in *inspector) signature(t inspected) string {
	s := in.c.styles
	if t.verifying {
		return in.spinner() + s.Subtle.Render(" checking…")
	}
	v := t.ver
	word := v.State.String()
	detail := ""
	if !v.KeyID.IsEmpty() {
		detail += " (key " + v.KeyID.String() + ")"
	}
	if r := sigReason(t); !r.IsEmpty() {
		detail += ": " + r.String()
	}
	switch v.State {
	case auth.SigVerified:
		return s.OK.Render(word) + s.Subtle.Render(detail)
	case auth.SigFailed:
		return s.Error.Render(word) + s.Subtle.Render(detail)
	default:
		return s.Warn.Render(word) + s.Subtle.Render(detail)
	}
}

func (in *inspector) View() string {
	s := in.c.styles
	var top string
	switch {
	case in.mode == inspectPasting:
		top = in.paste.View()
	case in.mode == inspectJWKS && in.errMsg != "":
		// The error under the field, for this moment (the claims give way).
		top = in.jwksField.View() + "\n  " + s.Error.Render(ansi.Truncate("✗ "+in.errMsg, max(10, in.width-4), "…"))
	case in.mode == inspectJWKS:
		top = in.jwksField.View()
	case in.errMsg != "":
		top = s.Error.Render("✗ " + in.errMsg)
	default:
		src := in.source
		if src == "" {
			src = "no token"
		}
		top = show(s.Subtle, text.Cleanf("Source: %s  ·  p pastes another token", src))
		if in.jwks != "" {
			top = show(s.Subtle, text.Cleanf("Source: %s  ·  keys from ", src)) + show(s.Value, text.Sanitize(in.jwks))
		}
	}
	claims := in.visibleClaims()
	claims = markMore(claims, in.width, in.vp.YOffset() > 0, !in.vp.AtBottom(), s.Subtle)
	return fitBlock("  "+top+"\n"+strings.Join(in.sum, "\n")+"\n"+strings.Join(claims, "\n"), in.width, in.height)
}

// visibleClaims is the claims in sight, height lines, as the viewport
// shows them (its View pads them through a lipgloss style: most of this
// screen's work every second, when its relative times move).
func (in *inspector) visibleClaims() []string {
	lines := strings.Split(in.vp.GetContent(), "\n")
	h := in.vp.Height()
	off := min(in.vp.YOffset(), max(0, len(lines)-h))
	end := min(len(lines), off+h)
	out := append(make([]string, 0, h), lines[off:end]...)
	for len(out) < h {
		out = append(out, "")
	}
	w := in.vp.Width()
	for i, l := range out {
		if lw := ansi.StringWidth(l); lw > w {
			out[i] = ansi.Cut(l, 0, w)
		} else {
			out[i] = l + strings.Repeat(" ", w-lw)
		}
	}
	return out
}

// summarize is the summary on the first token (the access token of a key,
// or the pasted one), always in sight above the scrolling claims: its kind,
// signature and expiry on one line, and the reason the signature was not
// verified beside it when it fits, else on a second line.
func (in *inspector) summarize() []string {
	if len(in.tokens) == 0 {
		return []string{""}
	}
	s := in.c.styles
	t := in.tokens[0]
	title := s.FieldName.Render(t.title + ":")
	switch {
	case !t.decodeErr.IsEmpty():
		return []string{title + " " + show(s.Error, text.Concat(text.Trusted("cannot decode: "), t.decodeErr))}
	case t.dec == nil || t.dec.Format != auth.FormatJWT:
		return in.opaqueSummary(title, t)
	}
	sep := s.Subtle.Render(" · ")
	kind := show(s.Value, text.Concat(text.Trusted("JWT "), text.Sanitize(t.dec.Alg).Or(text.Trusted("—"))))
	exp, expStyle := in.expiryWords(t)
	sig, reason, sigStyle := in.signatureWords(t)
	if reason != "" {
		if one := title + " " + kind + sep + sigStyle.Render(sig+": "+reason) + sep + expStyle.Render(exp); lipgloss.Width(one) <= in.width-2 {
			return append(append([]string{one}, in.bindingLines(t)...), in.futureLines(t)...)
		}
	}
	lines := []string{title + " " + kind + sep + sigStyle.Render(sig) + sep + expStyle.Render(exp)}
	if reason != "" {
		iss := t.ver.Issuer.Or(text.Sanitize(t.dec.Issuer))
		lines = append(lines, "  "+sigStyle.Render(fitReason(reason, iss.String(), in.width-4)))
	}
	return append(append(lines, in.bindingLines(t)...), in.futureLines(t)...)
}

// opaqueSummary is the summary of a token that is not a JWT, and whether
// it is DPoP-bound.
func (in *inspector) opaqueSummary(title string, t inspected) []string {
	s := in.c.styles
	lines := []string{title + " " + s.Subtle.Render("opaque (not a JWT): no claims, no signature to check")}
	if t.dpop {
		lines = append(lines, "  "+s.Value.Render(ansi.Truncate("DPoP-bound: sent only with a proof by this key's DPoP key", max(10, in.width-4), "…")))
	}
	return lines
}

// expiryWords say when t expires (or expired), and in which style.
func (in *inspector) expiryWords(t inspected) (string, lipgloss.Style) {
	s := in.c.styles
	e := t.dec.ExpiresAt
	switch {
	case e.IsZero():
		return "no expiry", s.Value
	case e.After(in.c.now):
		return "expires " + text.Relative(e, in.c.now), s.Value
	}
	return "expired " + text.Relative(e, in.c.now), s.Error
}

// signatureWords say where t's signature check stands, why it was not
// verified (reason, "" when it was), and in which style.
func (in *inspector) signatureWords(t inspected) (sig, reason string, style lipgloss.Style) {
	s := in.c.styles
	switch {
	case t.verifying:
		return "checking signature…", "", s.Subtle
	case t.ver.State == auth.SigVerified:
		return "signature verified", "", s.OK
	case t.ver.State == auth.SigFailed:
		return "signature failed", t.ver.Reason.String(), s.Error
	case hmacSigned(t):
		return "signature not verified", sigReason(t).String(), s.Warn
	}
	// "issuer X is not one of your connections; not fetching its keys"
	reason, _, _ = strings.Cut(sigReason(t).String(), ";")
	reason = strings.TrimSpace(reason)
	if t.ver.KeysUnavailable && in.jwks == "" {
		reason += " (w: check with a JWKS URL)"
	}
	return "signature not verified", reason, s.Warn
}

// bindingLines say what a bound token is bound to (cnf) and whether that is
// the key's own DPoP key or certificate; none for a bearer token.
func (in *inspector) bindingLines(t inspected) []string {
	b := t.dec.Binding(t.ownJKT, t.ownX5T)
	if b == "" {
		return nil
	}
	style := in.c.styles.Value
	if strings.Contains(b, "NOT") {
		style = in.c.styles.Error
	}
	return []string{"  " + style.Render(ansi.Truncate("bound to "+b, max(10, in.width-4), "…"))}
}

// futureLines warn of an iat or nbf in the future, one line each.
func (in *inspector) futureLines(t inspected) []string {
	var lines []string
	for _, f := range t.dec.FutureTimes(in.c.now) {
		lines = append(lines, "  "+in.c.styles.Warn.Render(ansi.Truncate("⚠ "+f.Warning(), max(10, in.width-4), "…")))
	}
	return lines
}

// opaqueDPoP says that an opaque token of a DPoP key is DPoP-bound: it has
// no cnf claim to show, and the server keeps the binding.
const opaqueDPoP = "DPoP-bound: the server bound this token to the key's DPoP key (no cnf claim to show in an opaque token); it is sent only with a DPoP proof, as shipkey api and header --dpop-proof do."

// hmacSigned reports whether the token is a JWT signed with an HMAC
// (HS256, HS384, HS512): a shared secret, which a client never holds.
func hmacSigned(t inspected) bool {
	return t.dec != nil && strings.HasPrefix(t.dec.Alg, "HS") && t.ver.State != auth.SigVerified && t.ver.State != auth.SigFailed
}

// sigReason is why the signature was not verified, in words: for an HMAC
// signature, only what is known.
func sigReason(t inspected) text.Clean {
	if hmacSigned(t) && !t.verifying {
		return text.Cleanf("HMAC-signed (%s): a client cannot check it", t.dec.Alg)
	}
	return t.ver.Reason
}

// fitReason fits reason to width cells by eliding the issuer it names
// ("issuer https://… is not one of your connections") before its end.
func fitReason(reason, issuer string, width int) string {
	over := ansi.StringWidth(reason) - width
	if over <= 0 {
		return reason
	}
	if issuer != "" && strings.Contains(reason, issuer) {
		short := "…"
		if keep := ansi.StringWidth(issuer) - over - 1; keep >= 12 {
			short = ansi.Truncate(issuer, keep+1, "…")
		}
		reason = strings.Replace(reason, issuer, short, 1)
	}
	return ansi.Truncate(reason, max(1, width), "…")
}

func (in *inspector) ShortHelp() []key.Binding {
	k := in.c.keys
	if in.mode != inspectViewing {
		return []key.Binding{k.Enter, k.Back, k.ForceQuit}
	}
	return []key.Binding{k.ScrollUp, k.ScrollDown, k.Paste, k.JWKS, k.Back, k.Help, k.Quit}
}

func (in *inspector) FullHelp() [][]key.Binding {
	k := in.c.keys
	return [][]key.Binding{{k.ScrollUp, k.ScrollDown}, {k.Paste, k.JWKS, k.Back}}
}
