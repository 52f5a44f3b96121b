package tui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/audit"
)

// The Activity screen ("5") shows the audit trail's newest hand-outs as
// they happen, by any shipkey process (the CLI's tokens, the sockets', this
// app's copies): it follows the trail's file as the app follows the
// store's (watchStore), and reads the file's end when it changes. This file
// also records the app's own hand-outs (a copy, a reveal) before they
// happen, through the Backend when it is a handOutRecorder.

// activityShown is how many of the newest entries the screen holds.
const activityShown = 200

// handOutRecorder is a Backend that records what the app hands out in the
// audit trail (the key service, store/keys): a token is copied or shown
// whole only once its entry is written.
type handOutRecorder interface {
	RecordApp(label string, what audit.What, token string) error
}

// activityMsg is a message of this file's: dispatch hands them to
// handleActivity.
type activityMsg interface{ activity() }

// activityChangedMsg: the trail's file changed.
type activityChangedMsg struct{}

// activityLoadedMsg carries the newest entries read.
type activityLoadedMsg struct {
	entries []audit.Entry
	err     error
}

// handOutRecordedMsg says whether the entry of a copy or a reveal was
// written; the hand-out follows only when it was.
type handOutRecordedMsg struct {
	label  string
	what   audit.What
	tokens *auth.TokenSet
	header bool
	err    error
}

func (activityChangedMsg) activity() {}
func (activityLoadedMsg) activity()  {}
func (handOutRecordedMsg) activity() {}

// actReveal asks to show a key's access token whole (recorded first).
type actReveal struct {
	label  string
	tokens *auth.TokenSet
}

func (actReveal) isAction() {}

// handleActivity dispatches this file's messages.
func (m *Model) handleActivity(msg activityMsg) tea.Cmd {
	switch msg := msg.(type) {
	case activityChangedMsg:
		return tea.Batch(m.listenActivity(), m.loadActivity())
	case activityLoadedMsg:
		m.activity.loaded(msg)
	case handOutRecordedMsg:
		if msg.err != nil {
			m.toast, m.toastOK = text.Concat(text.Trusted("Not handed out: "), errClean(msg.err)), false
			return nil
		}
		if msg.what == audit.Reveal {
			if m.details.key.Label == msg.label {
				m.details.reveal = true
			}
			return nil
		}
		return m.copyTokenNow(msg.label, msg.tokens, msg.header)
	}
	return nil
}

// recordHandOut writes the entry of a copy or a reveal, then hands it out
// (handleActivity); without a recorder (a backend without the trail) it
// hands it out at once.
func (m *Model) recordHandOut(msg handOutRecordedMsg) tea.Cmd {
	rec, ok := m.backend.(handOutRecorder)
	if !ok {
		return func() tea.Msg { return msg }
	}
	return func() tea.Msg {
		msg.err = rec.RecordApp(msg.label, msg.what, msg.tokens.AccessToken)
		return msg
	}
}

// reveal shows a key's access token whole, once recorded.
func (m *Model) reveal(a actReveal) tea.Cmd {
	if a.tokens == nil || a.tokens.AccessToken == "" {
		m.details.reveal = true // nothing to show: the screen says so
		return nil
	}
	return m.recordHandOut(handOutRecordedMsg{label: a.label, what: audit.Reveal, tokens: a.tokens})
}

// openActivity is "5".
func (m *Model) openActivity() tea.Cmd {
	return tea.Batch(m.goTo(screenActivity), m.loadActivity())
}

// loadActivity reads the trail's newest entries.
func (m *Model) loadActivity() tea.Cmd {
	l := m.cfg.audit
	if l == nil {
		return nil
	}
	return func() tea.Msg {
		entries, err := l.Tail(activityShown)
		return activityLoadedMsg{entries: entries, err: err}
	}
}

// listenActivity waits for the next change of the trail's file.
func (m *Model) listenActivity() tea.Cmd {
	ch := m.cfg.activityChanges
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		return activityChangedMsg{}
	}
}

// activity is the Activity screen.
type activity struct {
	c       *common
	pane    pane
	off     bool   // the trail is off (SHIPKEY_AUDIT=off)
	path    string // the trail's file
	entries []audit.Entry
	err     string
	read    bool // entries were read at least once
}

func newActivity(c *common, l *audit.Log) *activity {
	a := &activity{c: c, pane: newPane(c), off: l == nil}
	if l != nil {
		a.path = l.Path()
	}
	return a
}

func (a *activity) loaded(msg activityLoadedMsg) {
	a.read = true
	a.err = ""
	if msg.err != nil {
		a.err = errText(msg.err)
		return
	}
	a.entries = msg.entries
}

func (a *activity) Update(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, a.c.keys.Back) {
		return actBack{}, nil
	}
	a.pane.scroll(msg, a.c.keys, a.content(), true)
	return nil, nil
}

func (a *activity) View() string { return a.pane.view(a.content()) }

// content is the screen's lines: newest first, one hand-out a line (time,
// key, what, way, receiver); narrow terminals cut the end of a line.
func (a *activity) content() string {
	s := a.c.styles
	var b strings.Builder
	// The notices wrap (a narrow terminal cuts only the entries' lines).
	say := func(st lipgloss.Style, msg string) {
		for _, l := range wrapStyled(st, msg, a.pane.width) {
			b.WriteString(l + "\n")
		}
	}
	switch {
	case a.off:
		say(s.Subtle, "The audit trail is off (SHIPKEY_AUDIT=off): hand-outs are not recorded.")
		return b.String()
	case a.err != "":
		say(s.Error, "Cannot read the audit trail: "+a.err)
	case !a.read:
		say(s.Subtle, "Reading the audit trail…")
	case len(a.entries) == 0:
		say(s.Subtle, "No hand-out yet. Tokens handed out by shipkey appear here as they happen.")
	default:
		b.WriteString(s.Subtle.Render(fmt.Sprintf("Hand-outs, newest first (%d shown) · shipkey audit lists them all", len(a.entries))) + "\n")
	}
	for _, e := range slices.Backward(a.entries) {
		b.WriteString(activityLine(e) + "\n")
	}
	if a.path != "" {
		b.WriteString(s.Subtle.Render("Trail: "+text.Path(a.path)) + "\n")
	}
	return b.String()
}

// activityLine is one entry: local time, key (and audience), what, way,
// receiver (pid and executable's name). Every field is untrusted text.
func activityLine(e audit.Entry) string {
	key := e.Key
	if e.Audience != "" {
		key += "→" + e.Audience
	}
	to := fmt.Sprintf("pid %d", e.To.PID)
	if e.To.Exe != "" {
		to += " " + filepath.Base(e.To.Exe)
	}
	return text.Safe(fmt.Sprintf("%s %s %s %s %s", e.Time.Local().Format("15:04:05"), key, e.What, e.Via, to))
}

func (a *activity) SetSize(width, height int) { a.pane.setSize(width, height) }

func (a *activity) ShortHelp() []key.Binding {
	k := a.c.keys
	return []key.Binding{k.ScrollUp, k.ScrollDown, k.Back, k.Help, k.Quit}
}

func (a *activity) FullHelp() [][]key.Binding {
	k := a.c.keys
	return [][]key.Binding{{k.ScrollUp, k.ScrollDown, k.PageUp, k.PageDown, k.Top, k.Bottom}}
}

func (a *activity) Capturing() bool { return false }
