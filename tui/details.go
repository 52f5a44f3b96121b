package tui

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// detailsState is the token details flow.
type detailsState int

const (
	detailsIdle          detailsState = iota
	detailsRefreshing                 // a refresh is in flight
	detailsPassword                   // asking the password to log in again
	detailsLoggingIn                  // a login is in flight
	detailsConfirmLogout              // "log out …? (y/n)"
	detailsLoggingOut                 // a logout is in flight
)

// liveState is the server check of the access token ("does the server
// still accept it?"), which runs beside the details flow.
type liveState int

const (
	liveNone     liveState = iota // not asked: no token, or nothing to ask with
	liveChecking                  // a check is in flight
	liveAnswered                  // live holds the server's answer
	liveFailed                    // the check could not be made: liveErr says why
)

// details shows one key's token response with live countdowns.
type details struct {
	c             *common
	bars          map[barKey]string // rendered progress bars (bar)
	width, height int
	key           store.Key
	// partial: key is only what the key list's row knows (KeyRow.Key):
	// the key is being read (the screen says so and waits for it).
	partial bool
	tokens  *auth.TokenSet // with secrets; nil when the key has none
	// reading: the key's tokens are being read (the screen shows its
	// metadata meanwhile); a copy asked for then waits for them (queued).
	reading        bool
	queued         *actCopy
	state          detailsState
	reveal         bool
	auto           bool
	ended          bool // the session is known to have ended: only a login helps
	liveState      liveState
	live           auth.Liveness // the server's answer (liveAnswered)
	liveErr        string        // sanitized (liveFailed)
	autoFailedFor  time.Time     // the expiry an automatic refresh already failed for
	errMsg         string
	password       textinput.Model
	prompt         bool // the password prompt is open (asking, or its login in flight)
	spinner        func() string
	pane           pane
	wait, liveWait waitClock // how long the operation and the server check have been in flight
}

func newDetails(c *common, spinner func() string) *details {
	d := &details{c: c, spinner: spinner, pane: newPane(c)}
	d.password = c.styles.newTextInput("")
	d.password.EchoMode = textinput.EchoPassword
	d.password.EchoCharacter = '•'
	d.password.Placeholder = "password"
	return d
}

func (d *details) restyle() {
	d.password.SetStyles(d.c.styles.TextInput)
	clear(d.bars)
}

// open shows k with tokens; a different key resets the view.
func (d *details) open(k store.Key, tokens *auth.TokenSet) {
	switch {
	case k.Label != d.key.Label || k.ID != d.key.ID:
		d.reveal = false
		d.queued = nil
		d.autoFailedFor = time.Time{}
		d.liveState = liveNone
		d.pane.vp.GotoTop()
	case tokens != nil && d.tokens != nil && tokens.AccessToken != d.tokens.AccessToken:
		d.liveState = liveNone // the server's word was about the old token
	}
	d.key, d.tokens, d.partial = k, tokens, false
	d.state = detailsIdle
	d.ended = k.LoggedOut || k.StatusAt(d.c.now) == store.StatusLoginNeeded
	d.errMsg = ""
	d.closePrompt()
}

// setKey takes the shown key's fresh metadata (a new key list).
func (d *details) setKey(k store.Key) { d.key, d.partial = k, false }

// closePrompt closes the password prompt and forgets what was typed.
func (d *details) closePrompt() {
	d.prompt = false
	d.password.Blur()
	d.password.SetValue("")
}

func (d *details) SetSize(width, height int) {
	d.width, d.height = width, height
	d.password.SetWidth(min(40, max(10, width-24)))
	d.pane.setSize(width, height)
}

// Capturing: while the password prompt is open, from the first key to the
// answer of its login, keys are text (a retyped password never fires a
// binding).
func (d *details) Capturing() bool { return d.prompt || d.state == detailsConfirmLogout }

// sessionEnded reports whether the session is known to have ended: a
// refresh or login was refused with invalid_grant, the key was logged out,
// or the server's introspection said active:false. It changes the words
// shown, never what the keys do: no liveness verdict disables refresh,
// copy or auto-refresh (a refresh that the server refuses says so itself).
func (d *details) sessionEnded() bool {
	return d.ended || d.serverEnded()
}

// serverEnded reports whether token introspection answered active:false.
// A userinfo refusal is not that verdict (the endpoint may refuse for
// other reasons): it shows as "cannot tell".
func (d *details) serverEnded() bool {
	return d.liveState == liveAnswered && d.live.State == auth.LiveInactive && d.live.Via.String() == "introspection"
}

// startLiveCheck marks a server check as in flight.
func (d *details) startLiveCheck() {
	d.liveState, d.live, d.liveErr = liveChecking, auth.Liveness{}, ""
}

// liveResult applies the answer of a server check for this key.
func (d *details) liveResult(msg livenessMsg) {
	switch {
	case msg.err == nil:
		d.liveState, d.live = liveAnswered, msg.live
	case errors.Is(msg.err, store.ErrLoginNeeded):
		d.liveState = liveNone // no token to ask about: the State line says so
	default:
		d.liveState, d.liveErr = liveFailed, errText(msg.err)
	}
}

// busy reports whether an operation on the key is in flight.
func (d *details) busy() bool {
	return d.state == detailsRefreshing || d.state == detailsLoggingIn || d.state == detailsLoggingOut
}

// token returns what the screen shows: the full set, else the metadata.
func (d *details) token() *auth.TokenSet {
	if d.tokens != nil {
		return d.tokens
	}
	if d.key.LoggedOut { // its tokens are gone or dead: show none
		return &auth.TokenSet{}
	}
	t := d.key.Token
	return &t
}

// Update dispatches by what has the keys: the password prompt, the logout
// question, else the screen's keys (the pane scrolls first). Before the
// key is read only back works; while an operation is in flight only the
// keys that start none (viewKey) do.
func (d *details) Update(msg tea.Msg) (action, tea.Cmd) {
	switch {
	case d.prompt:
		return d.updatePrompt(msg)
	case d.state == detailsConfirmLogout:
		return d.updateConfirmLogout(msg), nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if d.pane.scroll(msg, d.c.keys, d.content(), true) || !ok {
		return nil, nil
	}
	if d.partial {
		// Nothing to act on before the key is read (a moment), but back,
		// and a copy, done once the tokens come.
		if km := d.c.keys; key.Matches(k, km.Back, km.Copy, km.CopyHeader) {
			act, _ := d.viewKey(k)
			return act, nil
		}
		return nil, nil
	}
	if act, done := d.viewKey(k); done || d.busy() {
		return act, nil
	}
	return d.sessionKey(k)
}

// viewKey handles the keys that start no operation on the key, so they
// work while one is in flight: back, reveal, auto-refresh, inspect, copy.
// done is false for any other key.
func (d *details) viewKey(k tea.KeyPressMsg) (act action, done bool) {
	km := d.c.keys
	label := d.key.Label
	switch {
	case key.Matches(k, km.Back):
		return actBack{}, true
	case key.Matches(k, km.Reveal):
		if d.reveal {
			d.reveal = false
			return nil, true
		}
		return actReveal{label: label, tokens: d.tokens}, true // shown once recorded
	case key.Matches(k, km.AutoRefresh):
		d.auto = !d.auto
		d.autoFailedFor = time.Time{}
		return nil, true
	case key.Matches(k, km.Inspect):
		return actInspectKey{label: label}, true
	case key.Matches(k, km.Copy), key.Matches(k, km.CopyHeader):
		if d.reading && d.tokens == nil {
			// The tokens are on their way: copied when they come.
			d.queued, d.errMsg = &actCopy{label: label, header: key.Matches(k, km.CopyHeader)}, ""
			return nil, true
		}
		if !d.hasAccessToken() {
			d.errMsg = "no token to copy: log in first (l)"
			return nil, true
		}
		return actCopy{label: label, header: key.Matches(k, km.CopyHeader), tokens: d.tokens}, true
	}
	return nil, false
}

// sessionKey handles the keys that start an operation on the key's
// session: check at the server, refresh, log in, log out.
func (d *details) sessionKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := d.c.keys
	switch {
	case key.Matches(k, km.CheckServer):
		if !d.hasAccessToken() {
			d.errMsg = "no token to check: log in first (l)"
			return nil, nil
		}
		d.errMsg = ""
		return actCheckLive{label: d.key.Label}, nil
	case key.Matches(k, km.Refresh):
		if d.tokens == nil || d.tokens.RefreshToken == "" || d.ended {
			d.errMsg = "nothing to refresh: log in again (l)"
			return nil, nil
		}
		d.state, d.errMsg = detailsRefreshing, ""
		return actRefresh{label: d.key.Label}, nil
	case key.Matches(k, km.Login):
		return d.login(k.String() == "enter")
	case key.Matches(k, km.Logout):
		d.askLogout()
	}
	return nil, nil
}

// hasAccessToken reports whether the key's access token is at hand (to
// copy or to check).
func (d *details) hasAccessToken() bool { return d.tokens != nil && d.tokens.AccessToken != "" }

// login logs in again: at once when nothing is to be typed here, else
// through the password prompt. enter logs in only once the session has
// ended (l always does).
func (d *details) login(enter bool) (action, tea.Cmd) {
	if enter && !d.sessionEnded() && d.tokens != nil {
		return nil, nil // enter logs in again only once the session has ended
	}
	d.errMsg = ""
	if d.key.RememberPassword || d.key.Grant.Or() != auth.GrantPassword {
		// Nothing to type here: the remembered password, the client's
		// secret, or a person on the sign-in screen.
		d.state = detailsLoggingIn
		return actLogin{label: d.key.Label}, nil
	}
	d.state, d.prompt = detailsPassword, true
	return nil, d.password.Focus()
}

// askLogout asks "log out …? (y/n)", unless there is no session to end.
func (d *details) askLogout() {
	if d.tokens == nil && d.key.LoggedOut {
		return
	}
	d.state, d.errMsg = detailsConfirmLogout, ""
	d.pane.set(d.content()) // with the question, its last line
	d.pane.vp.GotoBottom()
}

// updateConfirmLogout answers "log out …? (y/n)": y logs out, n or esc
// keeps the session.
func (d *details) updateConfirmLogout(msg tea.Msg) action {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, d.c.keys.Yes):
		d.state = detailsLoggingOut
		return actLogout{label: d.key.Label}
	case key.Matches(k, d.c.keys.No):
		d.state = detailsIdle
	}
	return nil
}

// updatePrompt handles the password prompt: enter logs in, esc closes it;
// while its login is in flight keys are swallowed.
func (d *details) updatePrompt(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if d.state == detailsLoggingIn {
		return nil, nil
	}
	if ok {
		switch {
		case key.Matches(k, d.c.keys.Back):
			d.state, d.errMsg = detailsIdle, ""
			d.closePrompt()
			return nil, nil
		case key.Matches(k, d.c.keys.Enter):
			pw := d.password.Value()
			if pw == "" {
				d.errMsg = "the password is required"
				return nil, nil
			}
			d.password.SetValue("")
			d.state, d.errMsg = detailsLoggingIn, ""
			return actLogin{label: d.key.Label, password: pw}, nil
		}
	}
	var cmd tea.Cmd
	d.password, cmd = d.password.Update(msg)
	return nil, cmd
}

// wantsAutoRefresh reports whether refresh-ahead should fire now: by the
// one lifecycle policy (auth.Expiry.RenewDue) applied to whichever ends
// first, the access token or the refresh window. A key renews ahead only
// while its refresh token is alive, or when its grant runs unattended
// (client credentials).
func (d *details) wantsAutoRefresh(now time.Time) bool {
	t := d.tokens
	if !d.auto || d.state != detailsIdle || d.ended || t == nil {
		return false
	}
	if !t.RefreshValid(now) && !d.key.RenewsItself() {
		return false
	}
	exp := refreshDeadline(t)
	if exp.IsZero() || exp.Equal(d.autoFailedFor) {
		return false
	}
	return auth.Expiry{ObtainedAt: t.ObtainedAt, At: exp}.RenewDue(now)
}

// refreshDeadline is what auto-refresh runs ahead of: whichever ends first,
// the access token or the refresh window. The real service's 30-minute
// refresh token ends long before its 15-day access token, and refreshing
// inside the window is what keeps the session alive.
func refreshDeadline(t *auth.TokenSet) time.Time {
	exp := t.AccessExpiry()
	if r := t.RefreshExpiresAt; !r.IsZero() && (exp.IsZero() || r.Before(exp)) {
		exp = r
	}
	return exp
}

// startAutoRefresh marks the screen as refreshing on its own.
func (d *details) startAutoRefresh() action {
	d.state = detailsRefreshing
	return actRefresh{label: d.key.Label, auto: true}
}

// result applies the answer of a login, refresh or open for this key; it
// reports whether a new token arrived (the key list and the server check
// are then due).
func (d *details) result(msg keyTokensMsg) bool {
	if msg.op == opOpen {
		d.reading = false
		switch {
		case msg.err != nil:
			d.errMsg = errText(msg.err)
		case !d.busy() && !d.prompt:
			d.open(msg.key, msg.tokens)
		}
		return false
	}
	if msg.err == nil {
		d.open(msg.key, msg.tokens)
		return true
	}
	d.state = detailsIdle
	switch {
	case msg.op == opLogin && d.prompt:
		// The prompt stays open with the error under it, for another try.
		d.state = detailsPassword
		d.errMsg = errText(msg.err)
		if auth.KindOf(msg.err) == auth.KindInvalidCredentials {
			d.errMsg = "wrong password — try again (esc cancels)"
		}
		return false
	case auth.IsLoginRequired(msg.err), errors.Is(msg.err, store.ErrLoginNeeded):
		d.ended = true
		d.errMsg = "session ended — log in again (l)"
	default:
		d.errMsg = msg.op.String() + " failed: " + errText(msg.err)
	}
	if msg.auto && d.tokens != nil {
		d.autoFailedFor = refreshDeadline(d.tokens)
	}
	return false
}

// takeQueued is the copy asked for while the tokens were being read, once
// they are here (nil while they are not, or when none was asked); with no
// token to copy, the screen says so.
func (d *details) takeQueued() action {
	q := d.queued
	if q == nil || d.reading {
		return nil
	}
	d.queued = nil
	if !d.hasAccessToken() || q.label != d.key.Label {
		if d.errMsg == "" {
			d.errMsg = "no token to copy: log in first (l)"
		}
		return nil
	}
	q.tokens = d.tokens
	return *q
}

// loggedOut applies the answer of a logout and returns the sentence that
// reports it (empty when errMsg says what went wrong).
func (d *details) loggedOut(res auth.EndResult, err error) text.Clean {
	d.state = detailsIdle
	d.tokens = nil
	d.key.LoggedOut = true
	d.ended = true
	d.reveal = false
	return logoutOutcome(res, err, &d.errMsg)
}

// logoutOutcome is what a logout did, in one sentence: the tokens are
// dropped here in every case; the server ended the session, had ended it,
// offers no way to, or refused (then errMsg, not the returned toast).
func logoutOutcome(res auth.EndResult, err error, errMsg *string) text.Clean {
	switch {
	case err != nil:
		*errMsg = "logged out here, but the server did not end the session: " + errText(err)
		return text.Clean{}
	case res.AlreadyEnded:
		return text.Trusted("Logged out: tokens dropped here; the server said the session had already ended.")
	case res.Ended():
		return text.Cleanf("Logged out: tokens dropped here and the session ended at the server (%s).", res.Via)
	default:
		return text.Trusted("Logged out: tokens dropped here; the server offers no way to end the session.")
	}
}

// status is the one verdict on the token, by the lifecycle policy
// (auth.Expiry) the countdowns follow too: valid, refreshing soon,
// refreshing…, expired or session ended (or logged out, and the login and
// logout in flight).
func (d *details) status(now time.Time) (string, bool) {
	t := d.token()
	switch {
	case d.state == detailsRefreshing:
		return d.spinner() + " refreshing…" + waitingNote(d.wait.since, now), true
	case d.state == detailsLoggingIn:
		return d.spinner() + " logging in…" + waitingNote(d.wait.since, now), true
	case d.state == detailsLoggingOut:
		return d.spinner() + " logging out…" + waitingNote(d.wait.since, now), true
	case d.key.LoggedOut || t.ObtainedAt.IsZero():
		return "logged out — press l to log in", false
	case d.sessionEnded():
		return "session ended — log in again (l)", false
	}
	switch t.Access().State(now) {
	case auth.ExpiryExpired:
		if refreshAlive(t, d.tokens != nil, now) {
			return "expired — refresh with r", false
		}
		return "expired — log in again (l)", false
	case auth.ExpiryDue:
		return "refreshing soon", true
	default:
		return "valid", true
	}
}

func (d *details) View() string { return d.pane.view(d.content()) }

// content is every line of the screen; the pane shows what fits. It is
// built from sections: who the key is, its token, the expiries, the state
// (with the server's word), and what is asked or went wrong.
func (d *details) content() string {
	var b screenLines
	if d.partial {
		d.readingSection(&b)
		return b.String()
	}
	t := d.token()
	d.identitySection(&b)
	b.WriteString("\n")
	access := d.maskedAccess()
	d.tokenSection(&b, t, access)
	b.WriteString("\n")
	d.expirySection(&b, t, access)
	b.WriteString("\n")
	d.stateSection(&b)
	d.promptSection(&b)
	return b.String()
}

// screenLines is a screen's content as it is built: line writes one line
// inside the screen's two-column margin.
type screenLines struct{ strings.Builder }

func (b *screenLines) line(str string) { b.WriteString("  " + str + "\n") }

// detailsNameW is the width of the details rows' name column.
const detailsNameW = 20

// readingSection is the screen while the key is read: its label, and the
// wait (or why the read failed).
func (d *details) readingSection(b *screenLines) {
	s := d.c.styles
	b.line(s.Value.Render(d.key.Words().Label.String()))
	b.WriteString("\n")
	if d.errMsg != "" {
		b.WriteString(indentWrapped("✗ "+d.errMsg, 2, d.width, s.Error.Render))
	} else {
		b.line(s.Subtle.Render("reading the key…"))
	}
}

// identitySection is who the key is: its label, user, realm, client and
// grant, flowed over as many lines as the width needs.
func (d *details) identitySection(b *screenLines) {
	s := d.c.styles
	kw := d.key.Words()
	label := kw.Label.String()
	pieces := []piece{{"", label}}
	if d.key.Username != "" {
		pieces = append(pieces, piece{"  ", kw.Username.String() + " @"}, piece{" ", kw.RealmURL.String()})
	} else {
		pieces = append(pieces, piece{"  ", kw.RealmURL.String()})
	}
	pieces = append(pieces, piece{"  ·  ", "client " + kw.ClientID.String()}, piece{"  ·  ", "grant " + grantLine(d.key)})
	if h := hardenedLine(d.key); h != "" {
		pieces = append(pieces, piece{"  ·  ", h})
	}
	for i, l := range flow(pieces, d.width-2) {
		if rest, ok := strings.CutPrefix(l, label); i == 0 && ok {
			b.line(s.Value.Render(label) + s.Subtle.Render(rest))
		} else {
			b.line(s.Subtle.Render(l))
		}
	}
}

// maskedAccess is the access token masked ("" when there is none).
func (d *details) maskedAccess() string {
	if d.tokens != nil {
		return text.Mask(d.tokens.AccessToken)
	}
	return d.key.Masked
}

// tokenSection is the token response's fields: the access token (masked,
// or whole once revealed), its type, scope, session and when it came.
func (d *details) tokenSection(b *screenLines, t *auth.TokenSet, access string) {
	s := d.c.styles
	d.accessRows(b, access)
	dash := text.Trusted("—")
	b.line(s.row("Token type", detailsNameW, show(s.Value, text.Sanitize(t.TokenType).Or(dash))))
	b.line(s.row("Scope", detailsNameW, show(s.Value, text.Sanitize(t.Scope).Or(dash))))
	b.line(s.row("Session state", detailsNameW, show(s.Value, text.Sanitize(t.SessionState).Or(dash))))
	if nbp, ok := notBeforePolicy(t); ok {
		b.line(s.row("Not-before policy", detailsNameW, s.Value.Render(nbp)))
	}
	obtained := text.Stamp(t.ObtainedAt)
	if !t.ObtainedAt.IsZero() {
		obtained += s.Subtle.Render("  (" + text.Relative(t.ObtainedAt, d.c.now) + ")")
	}
	b.line(s.row("Obtained at", detailsNameW, s.Value.Render(obtained)))
}

// accessRows is the access token's row: none, masked, or revealed whole
// (wrapped over as many lines as it needs).
func (d *details) accessRows(b *screenLines, access string) {
	s := d.c.styles
	const nameW = detailsNameW
	switch {
	case access == "":
		b.line(s.row("Access token", nameW, s.Subtle.Render("none")))
	case d.reveal && d.tokens != nil:
		w := max(20, d.width-nameW-4)
		parts := hardWrap(text.Safe(d.tokens.AccessToken), w)
		b.line(s.row("Access token", nameW, s.Secret.Render(parts[0])))
		for _, p := range parts[1:] {
			b.line(strings.Repeat(" ", nameW) + s.Secret.Render(p))
		}
		b.line(strings.Repeat(" ", nameW) + s.Subtle.Render("(v hides)"))
	default:
		b.line(s.row("Access token", nameW, s.Secret.Render(access)+s.Subtle.Render("  (v reveals)")))
	}
}

// expirySection is when the access and refresh tokens end, with their
// countdowns, and a warning when the clock looks skewed.
func (d *details) expirySection(b *screenLines, t *auth.TokenSet, access string) {
	accessNone, refreshNone := auth.ExpiryNotStated, auth.ExpiryNotStated
	switch {
	case access == "": // logged out or never logged in: nothing expires
		accessNone, refreshNone = "—", "—"
	case t.RefreshToken == "" && d.tokens != nil:
		refreshNone = "no refresh token"
	default:
		refreshNone = refreshExpiryUnstated(t)
	}
	b.line(d.expiryRow("Access expires", t.AccessExpiry(), time.Duration(t.ExpiresIn)*time.Second, accessNone))
	b.line(d.expiryRow("Refresh expires", t.RefreshExpiresAt, time.Duration(t.RefreshExpiresIn)*time.Second, refreshNone))
	if skew, bad := t.Skew(); bad {
		b.line(d.c.styles.Warn.Render(fmt.Sprintf("⚠ clock skew: the JWT's exp is %s off expires_in; check this machine's clock", skew.Round(time.Second))))
	}
}

// stateSection is the verdict on the token with auto-refresh beside it
// (under it when narrow), and the server's word on the token.
func (d *details) stateSection(b *screenLines) {
	s := d.c.styles
	const nameW = detailsNameW
	st, good := d.status(d.c.now)
	stStyle := s.OK
	if !good {
		stStyle = s.Warn
	}
	autoText := "auto-refresh off"
	if d.auto {
		autoText = "auto-refresh on for this key" // the key on screen only: the others age
	}
	stateRow := s.row("State", nameW, stStyle.Render(st)+s.Subtle.Render("  ·  "+autoText))
	if lipgloss.Width(stateRow) > d.width-2 {
		// Too narrow for the note beside the state: it goes on a line of
		// its own, whole where that fits (it says whom auto-refresh serves).
		b.line(s.row("State", nameW, stStyle.Render(st)))
		if stateRow = s.row("", nameW, s.Subtle.Render(autoText)); lipgloss.Width(stateRow) > d.width-2 {
			stateRow = s.Subtle.Render(autoText)
		}
	}
	b.line(stateRow)
	d.serverRows(b)
}

// serverRows is the Server row (serverLine), flowed under its name.
func (d *details) serverRows(b *screenLines) {
	parts, style, ok := d.serverLine(d.c.now)
	if !ok {
		return
	}
	const nameW = detailsNameW
	pieces := make([]piece, len(parts))
	for i, p := range parts {
		pieces[i] = piece{" ", p}
	}
	for i, l := range flow(pieces, max(20, d.width-nameW-2)) {
		if i == 0 {
			b.line(d.c.styles.row("Server", nameW, style.Render(l)))
		} else {
			b.line(strings.Repeat(" ", nameW) + style.Render(l))
		}
	}
}

// promptSection is what the screen asks or reports last: the password
// prompt, what went wrong, the logout question.
func (d *details) promptSection(b *screenLines) {
	s := d.c.styles
	const nameW = detailsNameW
	if d.prompt {
		b.line(s.row("Password", nameW, d.password.View()))
		if d.errMsg != "" {
			b.WriteString(indentWrapped("✗ "+d.errMsg, nameW+2, d.width, s.Error.Render))
		}
		b.line(strings.Repeat(" ", nameW) + s.Subtle.Render("enter logs in · esc cancels"))
	} else if d.errMsg != "" {
		b.WriteString(indentWrapped("✗ "+d.errMsg, 2, d.width, s.Error.Render))
	}
	if d.state == detailsConfirmLogout {
		b.WriteString("\n")
		b.WriteString(indentWrapped("Log out of \""+d.key.Shown().String()+"\"? Its tokens are dropped here and the session is ended at the server. (y/n)", 2, d.width, s.Warn.Render))
	}
}

// serverLine says what the server thinks of the access token, in parts
// that wrap as units when the line is narrow, and in which style; ok is
// false when there is nothing to say (no token).
func (d *details) serverLine(now time.Time) (parts []string, style lipgloss.Style, ok bool) {
	s := d.c.styles
	if d.tokens == nil || d.key.LoggedOut {
		return nil, s.Subtle, false
	}
	switch d.liveState {
	case liveChecking:
		return []string{d.spinner() + " checking…" + waitingNote(d.liveWait.since, now)}, s.Subtle, true
	case liveFailed:
		return []string{"cannot tell: " + d.liveErr}, s.Subtle, true
	case liveAnswered:
	default:
		return []string{"not checked (s checks)"}, s.Subtle, true
	}
	switch d.live.State {
	case auth.LiveActive:
		if via := d.live.Via.String(); via != "" {
			return []string{"accepts this token (" + via + ")"}, s.OK, true
		}
		return []string{"accepts this token"}, s.OK, true
	case auth.LiveInactive:
		if !d.serverEnded() {
			// Only introspection's active:false is the server's verdict.
			return []string{"cannot tell: " + orDash(d.live.Via.String()) + " refused the token", "(r refreshes, l logs in again)"}, s.Subtle, true
		}
		return []string{"the server ended this session (introspection)", "— log in again (l)"}, s.Warn, true
	default:
		reason := d.live.Detail().Or(text.Trusted("no answer"))
		return []string{"cannot tell: " + reason.String()}, s.Subtle, true
	}
}

// expiryRow renders one expiry with its live countdown and, from 60 columns
// up, a progress bar of the lifetime left.
func (d *details) expiryRow(name string, exp time.Time, life time.Duration, none string) string {
	s := d.c.styles
	now := d.c.now
	if exp.IsZero() {
		return s.row(name, 20, s.Subtle.Render(none))
	}
	left := exp.Sub(now)
	cd := text.Countdown(left)
	cdStyle := s.OK
	frac := 0.0
	if life <= 0 {
		life = exp.Sub(d.token().ObtainedAt)
	}
	if life > 0 {
		frac = min(1, max(0, float64(left)/float64(life)))
	}
	switch {
	case left <= 0:
		cdStyle = s.Error
	case frac < 0.2:
		cdStyle = s.Warn
	}
	if left > 0 {
		cd = "in " + cd
	}
	stamp := text.Stamp(exp)
	val := s.Value.Render(stamp) + "  " + cdStyle.Render(fmt.Sprintf("%-15s", cd))
	if d.width < 2+20+23+2+15 {
		// Narrow: the countdown first, the time after it (cut if need be).
		val = cdStyle.Render(cd) + "  " + s.Subtle.Render(stamp)
	}
	out := s.row(name, 20, val)
	// Indent, name, stamp, gap, countdown, gap: 2+20+23+2+15+2 = 64 columns.
	if d.width >= 60 {
		if barW := min(30, d.width-64); barW >= 6 {
			out += "  " + d.bar(frac, barW)
		}
	}
	return out
}

// barKey is what a bar's text depends on: its width, the cells filled (as
// bubbles' progress rounds them) and the colour band of the time left.
type barKey struct{ width, filled, band int }

// bar renders a bubbles progress bar whose colour follows the time left.
// Its text changes a few times over a token's life, so it is rendered once
// per change (a cell at a time it is most of a tick's rendering) and kept.
func (d *details) bar(frac float64, width int) string {
	k := barKey{width: width, filled: max(0, min(width, int(math.Round(float64(width)*frac)))), band: barBand(frac)}
	if b, ok := d.bars[k]; ok {
		return b
	}
	b := d.renderBar(frac, width)
	if d.bars == nil || len(d.bars) > 64 {
		d.bars = map[barKey]string{}
	}
	d.bars[k] = b
	return b
}

// renderBar is the bar's text, from bubbles' progress.
func (d *details) renderBar(frac float64, width int) string {
	s := d.c.styles
	opts := []progress.Option{progress.WithoutPercentage(), progress.WithWidth(width), progress.WithFillCharacters('█', '░')}
	if col := s.barColor(frac); col != nil {
		opts = append(opts, progress.WithColorFunc(func(total, _ float64) color.Color { return s.barColor(total) }))
	}
	p := progress.New(opts...)
	if s.barColor(frac) == nil {
		p.FullColor, p.EmptyColor = nil, nil
	}
	return p.ViewAs(frac)
}

// notBeforePolicy is the not-before-policy row's value, and whether the row
// shows. (When TokenSet.NotBeforePolicy becomes *int64, nil when the server
// did not send it, this is the one place that changes: return false for nil.)
func notBeforePolicy(t *auth.TokenSet) (string, bool) {
	if t.NotBeforePolicy == nil { // not sent by the server: nothing to show
		return "", false
	}
	v := *t.NotBeforePolicy
	out := fmt.Sprint(v)
	if v > 0 {
		out += " (" + text.Stamp(time.Unix(v, 0)) + ")"
	}
	return out, true
}

// refreshExpiryUnstated says why a refresh token shows no expiry: the server
// said none (refresh_expires_in 0, an offline token), or said nothing.
func refreshExpiryUnstated(t *auth.TokenSet) string { return t.RefreshExpiryNote() }

// refreshAlive reports whether the refresh token may still be redeemed, as
// far as the client can tell; withSecrets says t carries the token itself.
func refreshAlive(t *auth.TokenSet, withSecrets bool, now time.Time) bool {
	if withSecrets {
		return t.RefreshValid(now)
	}
	return !t.Refresh().Expired(now)
}

// grantLine names how the key obtains tokens, and what that means for
// renewal when it is not a person's doing.
func grantLine(k store.Key) string {
	g := viewOf(k.Grant)
	switch {
	case k.RenewsItself():
		return g.title + " (renews itself)"
	case k.Connection.IsPublic():
		return g.title + " (public client)"
	}
	return g.title
}

// hardenedLine says how a key of a hardened realm proves itself and what
// its tokens are bound to: the client authentication when chosen, and
// "DPoP-bound tokens" or "certificate-bound tokens"; "" for neither.
func hardenedLine(k store.Key) string {
	var parts []string
	m := k.Connection.AuthMethod()
	if m != "" && !m.Needs().Public {
		parts = append(parts, "client auth "+string(m))
	}
	switch {
	case k.Connection.DPoP || strings.EqualFold(k.Token.TokenType, auth.DPoPTokenType):
		parts = append(parts, "DPoP-bound tokens")
	case m.Needs().Cert:
		parts = append(parts, "certificate-bound tokens")
	}
	return strings.Join(parts, " · ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (d *details) ShortHelp() []key.Binding {
	k := d.c.keys
	if d.prompt {
		return []key.Binding{k.Enter, k.Back, k.ForceQuit}
	}
	if d.state == detailsConfirmLogout {
		return []key.Binding{k.Yes, k.No}
	}
	if d.partial {
		return []key.Binding{k.Back, k.Help, k.Quit}
	}
	if d.ended || d.tokens == nil {
		return []key.Binding{k.Login, k.CheckServer, k.Inspect, k.Back, k.Help, k.Quit}
	}
	return []key.Binding{k.Copy, k.CopyHeader, k.Reveal, k.Refresh, k.AutoRefresh, k.CheckServer, k.Inspect, k.Logout, k.Back, k.Help}
}

func (d *details) FullHelp() [][]key.Binding {
	k := d.c.keys
	return [][]key.Binding{{k.Copy, k.CopyHeader, k.Reveal}, {k.Refresh, k.AutoRefresh, k.Login, k.Logout}, {k.CheckServer, k.Inspect, k.Top, k.Bottom}}
}
