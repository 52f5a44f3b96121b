package tui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// The Request screen's history: every request sent is kept per key by the
// store (store.RequestHistory, without credentials); ↑/↓ in the URL field
// recall the chosen key's, newest first; ctrl+r lists its saved and sent
// requests, where e names one (saves it) and d forgets it; ctrl+y copies a
// request as a `shipkey curl` command line.

// reqHist is what the screen holds of the history.
type reqHist struct {
	asked bool                          // the history was asked for (it loads once)
	said  string                        // the last failure said (each is said once)
	byKey map[string]*store.KeyRequests // by label, as last read or written

	// pos is the history entry the fields show (-1: what was typed, kept
	// in draft while ↑/↓ walk the history); note says what it left out.
	pos   int
	draft store.Request
	note  text.Clean

	// The list (ctrl+r): its cursor, and while e is typed, the name.
	listing bool
	cursor  int
	naming  bool
	name    textinput.Model
	list    pane
}

func newReqHist(c *common) reqHist {
	h := reqHist{pos: -1, byKey: map[string]*store.KeyRequests{}, list: newPane(c)}
	h.name = c.styles.newTextInput("Name: ")
	h.name.Placeholder = "a name for this request"
	h.name.CharLimit = 100
	return h
}

// requestsLoadedMsg answers loadRequestsCmd: every key's requests.
type requestsLoadedMsg struct {
	all map[string]*store.KeyRequests
	err error
}

// requestsMsg answers a change of a key's requests: the key's requests as
// written (nil when the change failed).
type requestsMsg struct {
	label string
	kr    *store.KeyRequests
	err   error
}

// actRequests changes label's requests in the store (record, save,
// forget).
type actRequests struct {
	label  string
	change func(*store.RequestHistory) (*store.KeyRequests, error)
}

func (actRequests) isAction() {}

// actCopyCurl copies a request as a shipkey curl command line.
type actCopyCurl struct{ line, what string }

func (actCopyCurl) isAction() {}

// tmuxBufCurl is the tmux buffer of a copied shipkey curl command.
const tmuxBufCurl = "shipkey-curl"

// loadRequestsCmd reads the history (once: later changes come back from
// the writes).
func (m *Model) loadRequestsCmd() tea.Cmd {
	if m.request.hist.asked || m.backend == nil {
		return nil
	}
	m.request.hist.asked = true
	h := m.backend.Requests()
	if h == nil {
		return nil
	}
	return func() tea.Msg {
		all, err := h.Load()
		return requestsLoadedMsg{all: all, err: err}
	}
}

// requestsCmd runs a change of label's requests.
func (m *Model) requestsCmd(a actRequests) tea.Cmd {
	if m.backend == nil || m.backend.Requests() == nil {
		return nil
	}
	h := m.backend.Requests()
	return m.writes.cmd(func() tea.Msg {
		kr, err := a.change(h)
		return requestsMsg{label: a.label, kr: kr, err: err}
	})
}

// handleRequests takes what the store read or wrote; a damaged file (moved
// aside) or a failed write is said once on the status line.
func (m *Model) handleRequests(msg tea.Msg) {
	var err error
	switch msg := msg.(type) {
	case requestsLoadedMsg:
		for label, kr := range msg.all {
			if _, ok := m.request.hist.byKey[label]; !ok {
				m.request.hist.byKey[label] = kr
			}
		}
		err = msg.err
	case requestsMsg:
		if msg.kr != nil {
			m.request.hist.byKey[msg.label] = msg.kr
			m.request.clampCursor()
		}
		err = msg.err
	}
	if err != nil && err.Error() != m.request.hist.said {
		// Said once: a history that cannot be written fails every send.
		m.request.hist.said = err.Error()
		m.notice = text.Concat(text.Trusted("Request history: "), text.Sanitize(err.Error()))
	}
}

// keyRequests is the chosen key's requests (never nil).
func (r *request) keyRequests() *store.KeyRequests {
	if kr := r.hist.byKey[r.label()]; kr != nil {
		return kr
	}
	return &store.KeyRequests{}
}

// typed is the fields as the history keeps them (before cleaning).
func (r *request) typed() store.Request {
	q := store.Request{Method: requestMethods[r.method], URL: strings.TrimSpace(r.url.Value()),
		Audience: strings.TrimSpace(r.audience.Value()), Body: r.body.Value()}
	for _, l := range strings.Split(r.headers.Value(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			q.Headers = append(q.Headers, l)
		}
	}
	if strings.TrimSpace(q.Body) == "" {
		q.Body = ""
	}
	return q
}

// fill puts q in the fields; the text is from a file, cleaned of what
// could reach the terminal.
func (r *request) fill(q store.Request) {
	r.method = max(0, slices.Index(requestMethods, knownMethod(q.Method)))
	r.url.SetValue(text.Safe(q.URL))
	r.url.CursorEnd()
	r.audience.SetValue(text.Safe(q.Audience))
	hs := make([]string, len(q.Headers))
	for i, h := range q.Headers {
		hs[i] = text.Safe(h)
	}
	r.headers.SetValue(strings.Join(hs, "\n"))
	r.body.SetValue(text.SafeLines(q.Body))
	r.errs = [reqFieldCount]string{}
	r.general = ""
}

// knownMethod is m when the screen offers it, else GET (the file's text is
// not trusted).
func knownMethod(m string) string {
	if m = strings.ToUpper(m); slices.Contains(requestMethods, m) {
		return m
	}
	return http.MethodGet
}

// recall shows the next older (or newer) request of the chosen key's
// history in the fields; past the newest, what was typed comes back.
func (r *request) recall(older bool) {
	hist := r.keyRequests().History
	switch {
	case older && r.hist.pos+1 < len(hist):
		if r.hist.pos < 0 {
			r.hist.draft = r.typed()
		}
		r.hist.pos++
	case !older && r.hist.pos > 0:
		r.hist.pos--
	case !older && r.hist.pos == 0:
		r.hist.pos = -1
		r.fill(r.hist.draft)
		r.hist.note = text.Clean{}
		return
	default:
		return
	}
	q := hist[r.hist.pos]
	r.fill(q)
	r.hist.note = leftOutNote(q)
}

// leftOutNote says what the history did not keep of q ("" when nothing).
func leftOutNote(q store.Request) text.Clean {
	if len(q.LeftOut) == 0 {
		return text.Clean{}
	}
	return text.Cleanf("not kept in the history: %s", strings.Join(q.LeftOut, ", "))
}

// forgetRecall makes the fields what was typed again: an edit of a
// recalled request is a new request.
func (r *request) forgetRecall() {
	r.hist.pos, r.hist.note = -1, text.Clean{}
}

// recallLines are the lines under the fields while the history is walked,
// or a recalled request lacks what the history did not keep.
func (r *request) recallLines() string {
	s := r.c.styles
	out := ""
	if r.hist.pos >= 0 {
		n := len(r.keyRequests().History)
		out = indentWrapped(fmt.Sprintf("history %d of %d · ↑ older · ↓ newer", r.hist.pos+1, n), reqLabelWidth+2, r.width, s.Subtle.Render)
	}
	if !r.hist.note.IsEmpty() {
		out += indentWrapped(r.hist.note.String(), reqLabelWidth+2, r.width, s.Warn.Render)
	}
	return out
}

// listed is the list's rows: the saved requests, then the sent ones.
func (r *request) listed() []store.Request {
	kr := r.keyRequests()
	return append(slices.Clone(kr.Saved), kr.History...)
}

func (r *request) clampCursor() {
	r.hist.cursor = min(r.hist.cursor, max(0, len(r.listed())-1))
}

// openList shows the chosen key's requests (ctrl+r).
func (r *request) openList() {
	r.hist.listing, r.hist.cursor, r.hist.naming = true, 0, false
	r.url.Blur()
	r.audience.Blur()
	r.headers.Blur()
	r.body.Blur()
	r.hist.list.vp.GotoTop()
}

// updateList handles a key in the list: ↑/↓ choose, enter puts the
// request in the fields, ctrl+y copies it, e names it, d forgets it, esc
// goes back to the fields.
func (r *request) updateList(msg tea.Msg) (action, tea.Cmd) {
	km := r.c.keys
	if r.hist.naming {
		return r.updateNaming(msg)
	}
	rows := r.listed()
	r.clampCursor()
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		content, _ := r.listContent()
		r.hist.list.scroll(msg, km, content, false)
		return nil, nil
	}
	label := r.label()
	switch {
	case key.Matches(k, km.Back):
		r.hist.listing = false
		return nil, r.focusOn(r.focus)
	case key.Matches(k, km.Up):
		r.hist.cursor = max(0, r.hist.cursor-1)
	case key.Matches(k, km.Down):
		r.hist.cursor = min(max(0, len(rows)-1), r.hist.cursor+1)
	case len(rows) == 0:
		return nil, nil
	case key.Matches(k, km.Enter):
		q := rows[r.hist.cursor]
		r.hist.listing = false
		r.forgetRecall()
		r.fill(q)
		r.hist.note = leftOutNote(q)
		return nil, r.focusOn(reqFieldURL)
	case key.Matches(k, km.CopyCurl):
		q := rows[r.hist.cursor]
		return r.copyCurl(r.storedCall(q), q.LeftOut)
	case key.Matches(k, km.Rename):
		r.hist.naming = true
		r.hist.name.SetValue(text.Safe(rows[r.hist.cursor].Name))
		r.hist.name.CursorEnd()
		return nil, r.hist.name.Focus()
	case key.Matches(k, km.Delete):
		q := rows[r.hist.cursor]
		return actRequests{label: label, change: func(h *store.RequestHistory) (*store.KeyRequests, error) {
			return h.Forget(label, q)
		}}, nil
	default:
		content, _ := r.listContent()
		r.hist.list.scroll(msg, km, content, false)
		return nil, nil
	}
	r.followList()
	return nil, nil
}

// updateNaming handles a key while a name is typed: enter saves the
// request under it, esc gives up.
func (r *request) updateNaming(msg tea.Msg) (action, tea.Cmd) {
	km := r.c.keys
	k, ok := msg.(tea.KeyPressMsg)
	if ok && key.Matches(k, km.Cancel) {
		r.hist.naming = false
		r.hist.name.Blur()
		return nil, nil
	}
	if ok && (key.Matches(k, km.Enter) || key.Matches(k, km.Submit)) {
		rows := r.listed()
		name := strings.TrimSpace(r.hist.name.Value())
		if name == "" || r.hist.cursor >= len(rows) {
			return nil, nil
		}
		r.hist.naming = false
		r.hist.name.Blur()
		q, label := rows[r.hist.cursor], r.label()
		old := q.Name
		q.Name = name
		r.hist.cursor = 0 // a saved request comes first
		return actRequests{label: label, change: func(h *store.RequestHistory) (*store.KeyRequests, error) {
			if old != "" && old != name {
				if _, err := h.Forget(label, store.Request{Name: old}); err != nil {
					return nil, err
				}
			}
			return h.Save(label, q)
		}}, nil
	}
	var cmd tea.Cmd
	r.hist.name, cmd = r.hist.name.Update(msg)
	return nil, cmd
}

// followList scrolls the list to its cursor.
func (r *request) followList() {
	content, line := r.listContent()
	r.hist.list.follow(content, line)
}

// listContent is the list's lines and the cursor's line.
func (r *request) listContent() (string, int) {
	s := r.c.styles
	var b strings.Builder
	label := text.Sanitize(r.label())
	rows := r.listed()
	if len(rows) == 0 {
		b.WriteString(indentWrapped(text.Cleanf("No requests of key %s yet: each one sent (ctrl+s) is kept here.", label).String(), 2, r.width, s.Subtle.Render))
		b.WriteString(indentWrapped("esc goes back to the fields", 2, r.width, s.Subtle.Render))
		return b.String(), 0
	}
	kr := r.keyRequests()
	b.WriteString(indentWrapped(text.Cleanf("Key %s: %d saved, %d sent (newest first)", label, len(kr.Saved), len(kr.History)).String(), 2, r.width, s.Subtle.Render))
	line := 0
	w := max(10, r.width-4)
	for i, q := range rows {
		if i == r.hist.cursor {
			line = strings.Count(b.String(), "\n")
		}
		var c text.Clean
		if q.Name != "" {
			c = text.Cleanf("★ %s · %s %s", q.Name, knownMethod(q.Method), q.URL)
		} else {
			c = text.Cleanf("%s %s %s", q.At.In(r.c.now.Location()).Format("Jan 2 15:04"), knownMethod(q.Method), q.URL)
		}
		what := ansi.Truncate(c.String(), w, "…")
		if i == r.hist.cursor {
			b.WriteString(s.Focused.Render("› ") + s.Focused.Render(what) + "\n")
		} else {
			b.WriteString("  " + s.Value.Render(what) + "\n")
		}
	}
	b.WriteString("\n")
	if r.hist.naming {
		line = strings.Count(b.String(), "\n")
		b.WriteString("  " + r.hist.name.View() + "\n")
		b.WriteString(indentWrapped("enter saves it under this name · esc keeps it as it is", 2, r.width, s.Subtle.Render))
	} else {
		b.WriteString(indentWrapped("enter: into the fields · ctrl+y: copy as shipkey curl · e: name (save) · d: forget · esc: back", 2, r.width, s.Subtle.Render))
	}
	return b.String(), line
}

// storedCall is a stored request of the chosen key as it would be sent:
// its URL under the key's API URL, the screen's default headers.
func (r *request) storedCall(q store.Request) apiCall {
	call := apiCall{label: r.label(), audience: q.Audience, method: knownMethod(q.Method), header: http.Header{}, body: q.Body}
	call.header.Set("Accept", "application/json")
	for _, h := range q.Headers {
		if name, value, ok := strings.Cut(h, ":"); ok {
			call.header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	if call.body != "" && call.header.Get("Content-Type") == "" {
		call.header.Set("Content-Type", "application/json")
	}
	call.url = q.URL
	if u, err := resolveTarget(q.URL, r.base(), r.label()); err == nil {
		call.url = u
	}
	return call
}

// copyCurl copies call as a shipkey curl command line; leftOut is what
// its history entry already lacks.
func (r *request) copyCurl(call apiCall, leftOut []string) (action, tea.Cmd) {
	line, gone := curlCommand(call)
	for _, g := range leftOut {
		if !slices.Contains(gone, g) {
			gone = append(gone, g)
		}
	}
	what := "shipkey curl command"
	if len(gone) > 0 {
		what = text.Cleanf("%s (without %s)", what, strings.Join(gone, ", ")).String()
	}
	return actCopyCurl{line: line, what: what}, nil
}

// curlCommand is call as a `shipkey curl` command line for a POSIX shell,
// and what was left out of it: no token is on it (shipkey curl adds the
// key's), and nothing that carries a credential (store.CleanRequest).
func curlCommand(call apiCall) (string, []string) {
	q := store.Request{Method: call.method, URL: call.url, Audience: call.audience, Body: call.body}
	names := make([]string, 0, len(call.header))
	for name := range call.header {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range call.header.Values(name) {
			q.Headers = append(q.Headers, name+": "+v)
		}
	}
	q = store.CleanRequest(q)
	gone := q.LeftOut
	args := []string{"shipkey", "curl", "--key", text.ShellQuote(call.label)}
	if q.Audience != "" {
		args = append(args, "--audience", text.ShellQuote(q.Audience))
	}
	args = append(args, "--", "-sS")
	switch {
	case q.Method == http.MethodHead:
		args = append(args, "-I")
	case q.Method != http.MethodGet || q.Body != "":
		args = append(args, "-X", text.ShellQuote(q.Method))
	}
	for _, h := range q.Headers {
		args = append(args, "-H", text.ShellQuote(h))
	}
	if q.Body != "" {
		if strings.ContainsFunc(q.Body, func(c rune) bool { return c != '\n' && c != '\t' && !text.IsClean(string(c)) }) {
			gone = append(gone, "the body (it holds control characters)")
		} else {
			args = append(args, "--data-raw", "'"+strings.ReplaceAll(q.Body, "'", `'\''`)+"'")
		}
	}
	args = append(args, text.ShellQuote(q.URL))
	return strings.Join(args, " "), gone
}
