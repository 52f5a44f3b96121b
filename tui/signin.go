package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// signinState is the sign-in screen's flow: the grant waits for the person
// until the code or the wait expires; the grant's own answer (a token, a
// refusal, expired_token) ends it either way.
type signinState int

const (
	signinWaiting signinState = iota // the grant polls or listens
	signinExpired                    // the countdown reached zero; the grant's answer is on its way
)

// signin shows what an interactive grant asks of the person: a device code
// to enter at a URL, or a browser sign-in to finish, with a countdown. It
// returns intent only: copy (actCopyText), cancel (actCancelGrant).
type signin struct {
	c             *common
	width, height int
	prompt        auth.Prompt
	words         signinWords // what it shows of prompt and label, cleaned
	label         string      // the key being created or logged in
	state         signinState
	pane          pane
}

func newSignin(c *common) *signin {
	return &signin{c: c, pane: newPane(c)}
}

// show displays p for the key label.
func (s *signin) show(label string, p auth.Prompt) {
	if s.label != label || s.prompt.OpenURL() != p.OpenURL() {
		s.pane.vp.GotoTop()
	}
	s.label, s.prompt, s.state = label, p, signinWaiting
	s.words = wordsOf(label, p)
	s.retime(s.c.now)
}

// device reports whether the prompt is a device code's (else a browser's).
func (s *signin) device() bool { return s.prompt.UserCode != "" }

// retime moves the flow on with the clock (the countdown tick).
func (s *signin) retime(now time.Time) {
	if e := s.prompt.ExpiresAt; !e.IsZero() && !now.Before(e) {
		s.state = signinExpired
	}
}

func (s *signin) SetSize(width, height int) {
	s.width, s.height = width, height
	s.pane.setSize(width, height)
}

// Capturing: no text field; the screen is modal instead (screenID.modal).
func (s *signin) Capturing() bool { return false }

func (s *signin) Update(msg tea.Msg) (action, tea.Cmd) {
	if s.pane.scroll(msg, s.c.keys, s.content(), true) {
		return nil, nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil, nil
	}
	km := s.c.keys
	switch {
	case key.Matches(k, km.Cancel):
		return actCancelGrant{}, nil
	case s.device() && key.Matches(k, km.Copy):
		return actCopyText{text: s.prompt.UserCode, what: "device code"}, nil
	case key.Matches(k, km.Copy), key.Matches(k, km.CopyURL):
		return actCopyText{text: s.prompt.OpenURL(), what: "sign-in URL"}, nil
	case key.Matches(k, km.OpenBrowser):
		return actOpenBrowser{}, nil
	}
	return nil, nil
}

func (s *signin) View() string { return s.pane.view(s.content()) }

// content is every line of the screen; the pane shows what fits. URLs are
// never cut: they wrap, so that a person can read them off the screen.
// When the screen scrolls, their lines leave room at their right end for
// the pane's "↑ more" and "↓ more" (markMore), which would cover a piece.
func (s *signin) content() string {
	c := s.contentIn(s.width - 4)
	if strings.Count(c, "\n") > s.height {
		c = s.contentIn(s.width - 4 - lipgloss.Width(moreAbove) - 1)
	}
	return c
}

// contentIn is content with URL lines of at most urlRoom cells: what to
// open (and the code to enter), the key and the countdown, the wait.
func (s *signin) contentIn(urlRoom int) string {
	var b screenLines
	if s.device() {
		s.deviceSection(&b, urlRoom)
	} else {
		s.browserSection(&b, urlRoom)
	}
	b.WriteString("\n")
	s.keySection(&b)
	b.WriteString("\n")
	s.waitSection(&b)
	return b.String()
}

// signinNameW is the width of the sign-in rows' name column.
const signinNameW = 16

// signinWords are the prompt's texts that the screen shows, cleaned when
// the prompt arrived (show): they come from the server.
type signinWords struct {
	verifyURI, verifyURIComplete, authURL, redirectURI, userCode, label text.Clean
}

// wordsOf cleans what the screen shows of p, for the key label.
func wordsOf(label string, p auth.Prompt) signinWords {
	return signinWords{
		verifyURI:         text.Sanitize(p.VerificationURI),
		verifyURIComplete: text.Sanitize(p.VerificationURIComplete),
		authURL:           text.Sanitize(p.AuthURL),
		redirectURI:       text.Sanitize(p.RedirectURI),
		userCode:          text.Sanitize(p.UserCode),
		label:             text.Sanitize(label),
	}
}

// deviceSection is the device code's: the URL to open, the code to enter
// there, and the URL that carries the code when there is one.
func (s *signin) deviceSection(b *screenLines, urlRoom int) {
	st := s.c.styles
	b.line(st.Subtle.Render("Device code: approve this key in a browser, on any device."))
	b.WriteString("\n")
	s.urlRows(b, "Open", s.words.verifyURI, urlRoom)
	s.codeRows(b, s.words.userCode.String())
	if !s.words.verifyURIComplete.IsEmpty() {
		s.urlRows(b, "Or open", s.words.verifyURIComplete, urlRoom)
	}
}

// codeRows shows the code whole: spaced out where it fits, else as typed,
// else under its name instead of beside it, else without its box.
func (s *signin) codeRows(b *screenLines, code string) {
	st := s.c.styles
	frame := st.Code.GetHorizontalFrameSize()
	room := s.width - 2 - signinNameW
	switch {
	case lipgloss.Width(spaced(code))+frame <= room:
		code = spaced(code)
	case lipgloss.Width(code)+frame > room:
		b.line(st.Subtle.Render("Enter the code"))
		if lipgloss.Width(code)+frame <= s.width-2 {
			for _, l := range strings.Split(st.Code.Render(code), "\n") {
				b.line(l)
			}
		} else {
			b.line(st.Value.Bold(true).Render(code))
		}
		return
	}
	box := strings.Split(st.Code.Render(code), "\n")
	for i, l := range box {
		name := ""
		if i == len(box)/2 {
			name = "Enter the code"
		}
		b.line(st.row(name, signinNameW, l))
	}
}

// browserSection is the browser sign-in's: the URL to open and where the
// browser comes back to.
func (s *signin) browserSection(b *screenLines, urlRoom int) {
	b.line(s.c.styles.Subtle.Render("Browser sign-in: finish signing in in a browser on this machine."))
	b.WriteString("\n")
	s.urlRows(b, "Open", s.words.authURL, urlRoom)
	if !s.words.redirectURI.IsEmpty() {
		s.urlRows(b, "Comes back to", s.words.redirectURI, urlRoom)
	}
}

// urlRows shows the URL u under name, wrapped (urlWrap) beside it, or
// under it when the host does not fit beside the name.
func (s *signin) urlRows(b *screenLines, name string, url text.Clean, urlRoom int) {
	st := s.c.styles
	u := url.String()
	if lipgloss.Width(urlHead(u)) > urlRoom-signinNameW {
		// Too narrow for the host beside the name: the URL goes under it.
		b.line(st.Subtle.Render(name))
		for _, part := range urlWrap(u, max(20, urlRoom)) {
			b.line(st.Value.Render(part))
		}
		return
	}
	parts := urlWrap(u, max(20, urlRoom-signinNameW))
	b.line(st.row(name, signinNameW, st.Value.Render(parts[0])))
	for _, part := range parts[1:] {
		b.line(strings.Repeat(" ", signinNameW) + st.Value.Render(part))
	}
}

// keySection is the key the grant is for and how long the code (or the
// wait) lasts.
func (s *signin) keySection(b *screenLines) {
	st := s.c.styles
	b.line(st.row("Key", signinNameW, show(st.Value, s.words.label)))
	e := s.prompt.ExpiresAt
	if e.IsZero() {
		return
	}
	name := "Code expires"
	if !s.device() {
		name = "Waits until"
	}
	left := e.Sub(s.c.now)
	cd := st.OK.Render("in " + text.Countdown(left))
	if left <= 0 {
		cd = st.Error.Render("expired")
	}
	b.line(st.row(name, signinNameW, cd+st.Subtle.Render("  ("+text.Stamp(e)+")")))
}

// waitSection says what the screen waits for, or that the wait ended.
func (s *signin) waitSection(b *screenLines) {
	st := s.c.styles
	p := s.prompt
	switch {
	case s.state == signinExpired && s.device():
		b.line(st.Warn.Render("The code has expired; esc goes back to the form to start again."))
	case s.state == signinExpired:
		b.line(st.Warn.Render("The wait has ended; esc goes back to the form to start again."))
	case s.device():
		wait := "Waiting for the approval…"
		if p.Interval > 0 {
			wait = "Waiting for the approval (asked every " + p.Interval.Round(time.Second).String() + ")…"
		}
		b.line(st.Subtle.Render(wait))
	default:
		b.line(st.Subtle.Render("Waiting for the browser…"))
	}
	b.line(st.Subtle.Render("Nothing is stored until the server answers; esc cancels."))
}

// urlHead is a URL's scheme and host ("http://127.0.0.1:8080"), the part
// urlWrap never breaks.
func urlHead(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
			return u[:i+3+j]
		}
	}
	return u
}

// urlWrap cuts a URL into lines of at most width cells only before a "/",
// "?", "&" or "#" of its path and query, never inside its scheme and host
// or a query parameter, so that each line reads as a piece of the address
// (u copies it whole); a piece longer than a line is cut where it must.
func urlWrap(u string, width int) []string {
	if lipgloss.Width(u) <= width {
		return []string{u}
	}
	head := urlHead(u)
	rest := u[len(head):]
	pieces := []string{head}
	for rest != "" {
		j := strings.IndexAny(rest[1:], "/?&#")
		if j < 0 {
			pieces = append(pieces, rest)
			break
		}
		pieces = append(pieces, rest[:j+1])
		rest = rest[j+1:]
	}
	var out []string
	cur := ""
	for _, p := range pieces {
		switch {
		case lipgloss.Width(cur+p) <= width:
			cur += p
		case lipgloss.Width(p) <= width:
			out = append(out, cur)
			cur = p
		default:
			if cur != "" {
				out = append(out, cur)
			}
			cut := hardWrap(p, width)
			out = append(out, cut[:len(cut)-1]...)
			cur = cut[len(cut)-1]
		}
	}
	out = append(out, cur)
	if out[0] == "" {
		out = out[1:]
	}
	return out
}

// spaced puts a space between the characters of a short code, so that it
// reads well from across a desk: "ABCD-EFGH" → "A B C D - E F G H".
func spaced(code string) string {
	return strings.Join(strings.Split(code, ""), " ")
}

// copyHelp is the key map's Copy binding, its help saying what it copies
// here: the code, or a browser sign-in's URL (u copies that too).
func (s *signin) copyHelp() key.Binding {
	b := s.c.keys.Copy
	if s.device() {
		b.SetHelp(b.Help().Key, "copy code")
	} else {
		b.SetHelp(b.Help().Key, "copy URL")
	}
	return b
}

func (s *signin) ShortHelp() []key.Binding {
	k := s.c.keys
	if s.device() {
		return []key.Binding{s.copyHelp(), k.CopyURL, k.OpenBrowser, k.Cancel, k.Help, k.Quit}
	}
	return []key.Binding{s.copyHelp(), k.OpenBrowser, k.Cancel, k.Help, k.Quit}
}

func (s *signin) FullHelp() [][]key.Binding {
	k := s.c.keys
	if s.device() {
		return [][]key.Binding{{s.copyHelp(), k.CopyURL, k.OpenBrowser}, {k.Cancel, k.PageUp, k.PageDown}}
	}
	return [][]key.Binding{{s.copyHelp(), k.OpenBrowser}, {k.Cancel, k.PageUp, k.PageDown}}
}

// grantRun is one interactive grant in flight (create or log in again).
// The grant's goroutine hands its prompts to a buffered channel and never
// blocks on it; listen reads them into the event loop as messages. Nothing
// here is touched from the grant's goroutine but the channels.
type grantRun struct {
	seq      int  // the request id of the create or login
	prompted bool // a prompt arrived (the browser was offered it)
	op       opKind
	label    string
	cancel   context.CancelFunc
	prompts  chan auth.Prompt
	finished chan struct{} // closed when the grant's command returns
	// jwks carries a generated client key's public key set to the form;
	// goAhead is closed when the person has registered it.
	jwks    chan []byte
	goAhead chan struct{}
	goneOn  bool // goAhead is closed
}

func newGrantRun(ctx context.Context, seq int, op opKind, label string) (*grantRun, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &grantRun{seq: seq, op: op, label: label, cancel: cancel,
		prompts: make(chan auth.Prompt, 4), finished: make(chan struct{}),
		jwks: make(chan []byte, 1), goAhead: make(chan struct{})}, ctx
}

// registrar is the store's OnClientKey of the run: it hands the public key
// set to the form and waits until the person has registered it (enter) or
// gives up (esc: ctx ends, and nothing is stored).
func (g *grantRun) registrar(ctx context.Context) func(jwks []byte) error {
	ch, goAhead := g.jwks, g.goAhead
	return func(jwks []byte) error {
		select {
		case ch <- jwks:
		default:
		}
		select {
		case <-goAhead:
			return nil
		case <-ctx.Done():
			return errors.New("the generated client key was not registered; nothing was stored")
		}
	}
}

// registered lets the grant go on after the person registered the key.
func (g *grantRun) registered() {
	if !g.goneOn {
		g.goneOn = true
		close(g.goAhead)
	}
}

// prompter is the auth.Prompter of the run: called on the grant's
// goroutine, it only offers the prompt to the channel (a full channel drops
// it: the person has one already).
func (g *grantRun) prompter() auth.Prompter {
	ch := g.prompts
	return func(p auth.Prompt) {
		select {
		case ch <- p:
		default:
		}
	}
}

// listen waits for the run's next prompt; it returns nothing once the
// grant's command has returned.
func (g *grantRun) listen() tea.Cmd {
	prompts, jwks, finished, seq := g.prompts, g.jwks, g.finished, g.seq
	return func() tea.Msg {
		select {
		case p := <-prompts:
			return grantPromptMsg{seq: seq, prompt: p}
		case b := <-jwks:
			return clientKeyMsg{seq: seq, jwks: string(b)}
		case <-finished:
			return nil
		}
	}
}
