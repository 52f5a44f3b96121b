package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// requestState is the Request screen's flow: editing → sending → viewing
// the answer. A request that got no answer, or was cancelled, is editing
// again with the reason under the fields and every value kept.
type requestState int

const (
	requestEditing requestState = iota
	requestSending
	requestViewing
)

// The fields of the Request screen, in order.
const (
	reqFieldKey      = iota // a choice among the keys
	reqFieldAudience        // a text input: another service's client id, or empty
	reqFieldMethod          // a choice among requestMethods
	reqFieldURL             // a text input
	reqFieldHeaders         // a text area: "Name: value", one a line
	reqFieldBody            // a text area
	reqFieldCount
)

var reqFieldNames = [reqFieldCount]string{"Key", "Audience", "Method", "URL", "Headers", "Body"}

// reqLabelWidth is the width of the field names' column.
const reqLabelWidth = 10

// requestMethods are the methods the Method field offers.
var requestMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// isChoice reports whether field i is a choice (Choose changes it), not text.
func isChoice(i int) bool { return i == reqFieldKey || i == reqFieldMethod }

// isArea reports whether field i is a text area (↑/↓ and enter are its own).
func isArea(i int) bool { return i == reqFieldHeaders || i == reqFieldBody }

// request is the Request screen: it calls the API with a key's token, as
// `shipkey api` does, and shows the answer.
type request struct {
	c             *common
	width, height int
	state         requestState
	wait          waitClock     // how long the request has been in flight
	spinner       func() string // the root's spinner frame

	keys   *keyIndex // the keys to choose from (the app's key list)
	key    int       // index of a row of keys
	method int       // index in requestMethods
	url    textinput.Model
	// audience, when not empty, asks for a token for that other service
	// by token exchange with the key's (shipkey api --audience).
	audience textinput.Model
	// headers and body are the optional request headers and body.
	headers, body textarea.Model
	focus         int
	errs          [reqFieldCount]string // inline errors, per field
	general       string                // a failure that belongs to no field

	// defaultURL is the URL the field starts with when the key has no API
	// URL (the demo's API); prefilled is what the app last put in the
	// field: while the field holds it, opening the screen for another key
	// puts that key's URL there.
	defaultURL, prefilled string

	sent   apiCall    // what the answer shown answers
	answer *apiAnswer // the last answer (nil: none yet)
	// answerText is the answer's lines laid out for answerWidth and
	// answerQuery (the filter it was laid out for).
	answerText  string
	answerWidth int
	answerQuery string
	// filter shows only the body's lines holding its text (case does not
	// matter); filtering: the filter field has focus.
	filter    textinput.Model
	filtering bool

	pane pane // the fields (editing, sending)
	view pane // the answer (viewing)

	hist reqHist // the history and saved requests (reqhistory.go)
}

func newRequest(c *common, spinner func() string, defaultURL string) *request {
	r := &request{c: c, spinner: spinner, defaultURL: defaultURL, pane: newPane(c), view: newPane(c), hist: newReqHist(c)}
	r.url = c.styles.newTextInput("")
	r.url.Placeholder = "https://api.example.com/v1/shipments"
	r.url.CharLimit = 8 << 10
	r.audience = c.styles.newTextInput("")
	r.audience.Placeholder = "empty: the key's own token"
	r.audience.CharLimit = 1 << 10
	r.headers = c.styles.newTextArea()
	r.headers.Placeholder = "Name: value, one a line"
	r.headers.CharLimit = 16 << 10
	r.body = c.styles.newTextArea()
	r.body.Placeholder = "optional: a JSON body"
	r.body.CharLimit = 1 << 20
	r.body.MaxHeight = 0
	r.url.SetValue(defaultURL)
	r.prefilled = defaultURL
	r.filter = c.styles.newTextInput("/ ")
	r.filter.Placeholder = "filter the body's lines"
	r.filter.CharLimit = 200
	return r
}

func (r *request) restyle() {
	r.url.SetStyles(r.c.styles.TextInput)
	r.audience.SetStyles(r.c.styles.TextInput)
	r.headers.SetStyles(r.c.styles.TextArea)
	r.body.SetStyles(r.c.styles.TextArea)
	r.filter.SetStyles(r.c.styles.TextInput)
	r.hist.name.SetStyles(r.c.styles.TextInput)
}

func (r *request) SetSize(width, height int) {
	r.width, r.height = width, height
	r.pane.setSize(width, height)
	r.hist.list.setSize(width, height)
	r.hist.name.SetWidth(min(40, max(10, width-10)))
	r.sizeView()
	r.filter.SetWidth(min(40, max(10, width-6)))
	// The text input draws its cursor one cell past its width.
	w := max(10, width-reqLabelWidth-3)
	r.url.SetWidth(w)
	r.audience.SetWidth(w)
	r.headers.SetWidth(w)
	r.headers.SetHeight(2)
	r.body.SetWidth(w)
	// The body gets what the other lines leave, 2 to 8 lines.
	r.body.SetHeight(min(8, max(2, height-10)))
	r.layoutAnswer()
}

// Capturing: a field has focus while editing, and the filter while it
// is typed.
func (r *request) Capturing() bool {
	return r.state == requestEditing && !r.hist.listing || r.filtering || r.hist.naming
}

// Typing: the focused field takes text (? is typed there, f1 opens help).
func (r *request) Typing() bool {
	return r.state == requestEditing && !r.hist.listing && !isChoice(r.focus) || r.filtering || r.hist.naming
}

// filterShown reports whether the answer shows the filter line: it has
// focus or text.
func (r *request) filterShown() bool {
	return r.state == requestViewing && (r.filtering || r.filter.Value() != "")
}

// sizeView gives the answer's pane the screen, less the filter's line
// when it shows.
func (r *request) sizeView() {
	h := r.height
	if r.filterShown() {
		h--
	}
	r.view.setSize(r.width, max(1, h))
}

// busy reports whether a request is in flight.
func (r *request) busy() bool { return r.state == requestSending }

// setKeys takes a new key list, keeping the chosen key when it is still
// there.
func (r *request) setKeys(keys *keyIndex) {
	label := r.label()
	r.keys = keys
	r.key = 0
	r.choose(label)
}

// label is the chosen key's label ("" with no keys).
func (r *request) label() string {
	if r.key < r.keys.len() {
		return r.keys.row(int32(r.key)).label
	}
	return ""
}

// shownLabel is the chosen key's label as the screen shows it, cleaned
// when its row was made ("" with no keys).
func (r *request) shownLabel() string {
	if r.key < r.keys.len() {
		return r.keys.row(int32(r.key)).Shown()
	}
	return ""
}

// choose picks the key labelled label (no change when there is none).
func (r *request) choose(label string) {
	if i, ok := r.keys.indexOf(label); ok {
		r.key = i
	}
}

// open shows the screen for label's key: the values typed are kept; a URL
// the app put there follows the key (its api_url, else the default).
func (r *request) open(label string) tea.Cmd {
	r.choose(label)
	r.prefill()
	if r.state == requestViewing && r.answer == nil {
		r.state = requestEditing
	}
	if r.state == requestEditing && !r.hist.listing {
		return r.focusOn(r.focus)
	}
	return nil
}

// prefill puts the chosen key's URL in the URL field unless the person
// typed another.
func (r *request) prefill() {
	cur := strings.TrimSpace(r.url.Value())
	if cur != "" && cur != r.prefilled {
		return
	}
	u := r.base()
	r.url.SetValue(u)
	r.url.CursorEnd()
	r.prefilled = u
}

// focusOn focuses field i.
func (r *request) focusOn(i int) tea.Cmd {
	r.url.Blur()
	r.audience.Blur()
	r.headers.Blur()
	r.body.Blur()
	r.focus = (i + reqFieldCount) % reqFieldCount
	r.follow()
	switch r.focus {
	case reqFieldURL:
		return r.url.Focus()
	case reqFieldAudience:
		return r.audience.Focus()
	case reqFieldHeaders:
		return r.headers.Focus()
	case reqFieldBody:
		return r.body.Focus()
	}
	return nil
}

// follow scrolls the fields to the focused one.
func (r *request) follow() {
	content, line := r.content()
	r.pane.follow(content, line)
}

// Update dispatches by the screen's state: a request in flight takes only
// esc, the answer has its own keys, and while editing the saved-requests
// list or the fields get the message.
func (r *request) Update(msg tea.Msg) (action, tea.Cmd) {
	switch {
	case r.state == requestSending:
		return r.updateSending(msg)
	case r.state == requestViewing:
		return r.updateViewing(msg)
	case r.hist.listing:
		return r.updateList(msg)
	}
	return r.updateEditing(msg)
}

// updateSending handles a key while the request is in flight: esc cancels
// it; nothing else does anything.
func (r *request) updateSending(msg tea.Msg) (action, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, r.c.keys.Cancel) {
		return actCancelRequest{}, nil // the values stay
	}
	return nil, nil
}

// updateEditing handles the fields: a key the screen binds, the wheel
// scrolling them, else the message goes to the focused field.
func (r *request) updateEditing(msg tea.Msg) (action, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if act, cmd, done := r.editingCommand(msg); done {
			return act, cmd
		}
		if cmd, done := r.editingMove(msg); done {
			return nil, cmd
		}
	case tea.MouseWheelMsg:
		r.scrollFields(msg)
		return nil, nil
	}
	return r.typeInField(msg)
}

// editingCommand handles the keys that act on the request while editing:
// back, the saved requests, copy as curl, recall, send. done is false for
// any other key.
func (r *request) editingCommand(k tea.KeyPressMsg) (act action, cmd tea.Cmd, done bool) {
	km := r.c.keys
	switch {
	case key.Matches(k, km.Back):
		return actBack{}, nil, true
	case key.Matches(k, km.Requests):
		r.openList()
		return nil, nil, true
	case key.Matches(k, km.CopyCurl):
		call, bad := r.validate()
		if bad >= 0 {
			return nil, r.focusOn(bad), true
		}
		act, cmd := r.copyCurl(call, nil)
		return act, cmd, true
	case r.focus == reqFieldURL && key.Matches(k, km.Recall):
		r.recall(k.String() == "up")
		return nil, nil, true
	case key.Matches(k, km.Send), key.Matches(k, km.Enter) && !isArea(r.focus):
		act, cmd := r.submit()
		return act, cmd, true
	}
	return nil, nil, false
}

// editingMove handles the keys that move among the fields or change a
// choice: tab and the arrows (a text area keeps ↑/↓ and enter), the pages,
// ←/→ on a choice, which takes no other key. done is false for any other
// key: it is typed into the focused field.
func (r *request) editingMove(k tea.KeyPressMsg) (tea.Cmd, bool) {
	km := r.c.keys
	area := isArea(r.focus)
	switch {
	case key.Matches(k, km.TabNext), !area && key.Matches(k, km.NextField):
		return r.focusOn(r.focus + 1), true
	case key.Matches(k, km.TabPrev), !area && key.Matches(k, km.PrevField):
		return r.focusOn(r.focus - 1), true
	case !area && (key.Matches(k, km.PageUp) || key.Matches(k, km.PageDown)):
		r.scrollFields(k)
		return nil, true
	case isChoice(r.focus):
		if key.Matches(k, km.Choose) {
			r.change(k.String() == "left")
		}
		return nil, true
	}
	return nil, false
}

// scrollFields scrolls the fields by msg (a page key or the wheel).
func (r *request) scrollFields(msg tea.Msg) {
	content, _ := r.content()
	r.pane.scroll(msg, r.c.keys, content, false)
}

// typeInField gives msg to the focused text field (a choice takes no
// text); an edit forgets a recalled request, and a key clears the field's
// error.
func (r *request) typeInField(msg tea.Msg) (action, tea.Cmd) {
	var cmd tea.Cmd
	before := r.typed()
	switch r.focus {
	case reqFieldURL:
		r.url, cmd = r.url.Update(msg)
	case reqFieldAudience:
		r.audience, cmd = r.audience.Update(msg)
	case reqFieldHeaders:
		r.headers, cmd = r.headers.Update(msg)
	case reqFieldBody:
		r.body, cmd = r.body.Update(msg)
	default:
		return nil, nil
	}
	if after := r.typed(); !after.Same(before) {
		r.forgetRecall() // an edit of a recalled request is a new one
	}
	if _, ok := msg.(tea.KeyPressMsg); ok {
		r.errs[r.focus] = ""
		if isArea(r.focus) {
			r.follow() // the cursor's line, which enter may have moved
		}
	}
	return nil, cmd
}

// updateViewing handles the answer: scrolling, filtering the body,
// sending again, back to the fields (esc clears a filter first).
func (r *request) updateViewing(msg tea.Msg) (action, tea.Cmd) {
	km := r.c.keys
	if r.filtering {
		return r.updateFilter(msg)
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, km.Edit) && r.filter.Value() != "":
			r.setFilter("")
			return nil, nil
		case key.Matches(k, km.Edit):
			r.state = requestEditing
			r.sizeView()
			return nil, r.focusOn(r.focus)
		case key.Matches(k, km.Send):
			return r.submit()
		case key.Matches(k, km.CopyCurl):
			return r.copyCurl(r.sent, nil)
		case key.Matches(k, km.NextPage) && r.hasNextPage():
			r.url.SetValue(r.answer.next)
			return r.submit()
		case key.Matches(k, km.Filter):
			r.filtering = true
			r.sizeView()
			r.filter.CursorEnd()
			return nil, r.filter.Focus()
		}
	}
	r.view.scroll(msg, km, r.answerText, true)
	return nil, nil
}

// updateFilter handles a key while the filter has focus: esc clears it,
// enter (or tab) keeps it and gives the keys back to scrolling; pgup/pgdn
// and the wheel scroll what it shows.
func (r *request) updateFilter(msg tea.Msg) (action, tea.Cmd) {
	km := r.c.keys
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		r.view.scroll(msg, km, r.answerText, false)
		return nil, nil
	}
	switch {
	case key.Matches(k, km.FilterClear):
		r.filtering = false
		r.filter.Blur()
		r.setFilter("")
		return nil, nil
	case key.Matches(k, km.FilterKeep), key.Matches(k, km.TabNext), key.Matches(k, km.TabPrev):
		r.filtering = false
		r.filter.Blur()
		r.sizeView()
		return nil, nil
	case r.view.scroll(msg, km, r.answerText, false):
		return nil, nil
	}
	var cmd tea.Cmd
	r.filter, cmd = r.filter.Update(k)
	r.relayout()
	return nil, cmd
}

// setFilter puts q in the filter and shows the lines it keeps.
func (r *request) setFilter(q string) {
	r.filter.SetValue(q)
	r.relayout()
}

// relayout lays the answer out again when the filter's text changed,
// from its top, and sizes its pane for the filter's line.
func (r *request) relayout() {
	r.sizeView()
	if r.query() == r.answerQuery {
		return
	}
	r.answerWidth = -1
	r.layoutAnswer()
	r.view.vp.GotoTop()
}

// query is the filter's text as it is matched: lower-cased, trimmed.
func (r *request) query() string { return strings.ToLower(strings.TrimSpace(r.filter.Value())) }

// change moves the focused choice to the next key or method (back: the
// previous one).
func (r *request) change(back bool) {
	step := func(i, n int) int {
		if n == 0 {
			return 0
		}
		if back {
			return (i + n - 1) % n
		}
		return (i + 1) % n
	}
	r.forgetRecall()
	switch r.focus {
	case reqFieldKey:
		r.key = step(r.key, r.keys.len())
		r.errs[reqFieldKey] = ""
		r.prefill()
	case reqFieldMethod:
		r.method = step(r.method, len(requestMethods))
	}
}

// submit checks the fields and asks the root to send the request.
func (r *request) submit() (action, tea.Cmd) {
	call, bad := r.validate()
	if bad >= 0 {
		r.state = requestEditing
		return nil, r.focusOn(bad)
	}
	typed := r.typed()
	r.forgetRecall()
	r.state = requestSending
	r.general = ""
	r.url.Blur()
	r.audience.Blur()
	r.headers.Blur()
	r.body.Blur()
	r.follow() // the line that says it is sending
	return actSendRequest{call: call, typed: typed}, nil
}

// validate checks the fields before anything is sent: the request, or the
// first field at fault.
func (r *request) validate() (apiCall, int) {
	r.errs = [reqFieldCount]string{}
	r.general = ""
	call := apiCall{label: r.label(), method: requestMethods[r.method], header: http.Header{}}
	if call.label == "" {
		r.errs[reqFieldKey] = "no API key yet: get one first (n)"
	}
	call.audience, r.errs[reqFieldAudience] = checkAudience(r.audience.Value())
	var err error
	if call.url, err = r.target(); err != nil {
		r.errs[reqFieldURL] = err.Error()
	}
	call.header.Set("Accept", "application/json")
	r.errs[reqFieldHeaders] = addHeaders(call.header, r.headers.Value())
	call.body, r.errs[reqFieldBody] = checkBody(call.header, r.body.Value())
	for i, e := range r.errs {
		if e != "" {
			return apiCall{}, i
		}
	}
	return call, -1
}

// checkAudience is the Audience field's value, trimmed, and its error: an
// audience is one clean word (empty: the key's own token).
func checkAudience(v string) (audience, fault string) {
	audience = strings.TrimSpace(v)
	if audience != "" && (strings.ContainsAny(audience, " \t") || !text.IsClean(audience)) {
		return audience, "an audience is a client id, one word; empty sends the key's own token"
	}
	return audience, ""
}

// addHeaders sets the Headers field's lines ("Name: value", blank lines
// skipped) in h, and returns the error of the first line at fault ("" for
// none): not a header, or the Authorization the key's token takes.
func addHeaders(h http.Header, lines string) string {
	for _, l := range strings.Split(lines, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == "" || strings.ContainsAny(name, " \t") || !text.IsClean(l):
			return fmt.Sprintf("%q is not a header: write Name: value", text.Safe(l))
		case strings.EqualFold(name, "Authorization"):
			return "Authorization is the key's token; give other headers"
		}
		h.Set(name, strings.TrimSpace(value))
	}
	return ""
}

// checkBody is the Body field's value (blank: none) and its error: a body
// is sent as JSON unless a Content-Type says otherwise, and then must be
// JSON. It sets the Content-Type it defaults to in h.
func checkBody(h http.Header, v string) (body, fault string) {
	if strings.TrimSpace(v) == "" {
		return "", ""
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if isJSONType(h.Get("Content-Type")) && !json.Valid([]byte(v)) {
		return v, "not JSON (for other text, add a Content-Type header)"
	}
	return v, ""
}

// base is where the chosen key's requests go: its API URL (api_url),
// else the default URL (the demo's API); "" when neither.
func (r *request) base() string {
	if r.key < r.keys.len() {
		if u := r.keys.row(int32(r.key)).APIURL(); u != "" {
			return u
		}
	}
	return r.defaultURL
}

// target is the URL field as a full URL: a path (v1/… or /v1/…) goes after
// base, as shipkey api resolves it.
func (r *request) target() (string, error) {
	return resolveTarget(strings.TrimSpace(r.url.Value()), r.base(), r.label())
}

// resolveTarget is u as a full URL: a path goes after base, label's API
// URL.
func resolveTarget(u, base, label string) (string, error) {
	if u == "" {
		return "", errors.New("required")
	}
	if p, err := url.Parse(u); err == nil && p.Scheme == "" && p.Host == "" && p.Path != "" && !strings.HasPrefix(u, "//") {
		if base == "" {
			return "", fmt.Errorf("a path needs the key's API URL (shipkey keys set %s --api-url URL); or give a full https:// URL", text.ShellQuote(label))
		}
		u = strings.TrimRight(base, "/") + "/" + strings.TrimLeft(u, "/")
	}
	if err := auth.CheckURL(u); err != nil {
		return "", fmt.Errorf("URL %v", err)
	}
	return u, nil
}

// hasNextPage reports whether the answer shown has a next page to ask for:
// a GET's, on its own origin.
func (r *request) hasNextPage() bool {
	return r.answer != nil && r.answer.next != "" && r.sent.method == http.MethodGet
}

// sent records that the request went out.
func (r *request) sending(call apiCall) { r.sent = call }

// answered shows the answer to the request in flight.
func (r *request) answered(a *apiAnswer) {
	r.state = requestViewing
	r.answer = a
	r.answerWidth = -1
	r.sizeView()
	r.layoutAnswer()
	r.view.vp.GotoTop()
}

// failed returns to the fields with why the request got no answer.
func (r *request) failed(reason string) tea.Cmd {
	r.state = requestEditing
	r.general = reason
	return r.focusOn(r.focus)
}

// layoutAnswer lays the answer out for the screen's width (long lines
// wrap: a minified JSON answer is one long line).
func (r *request) layoutAnswer() {
	if r.answer == nil || (r.answerWidth == r.width && r.answerQuery == r.query()) {
		return
	}
	r.answerWidth, r.answerQuery = r.width, r.query()
	r.answerText = r.answer.render(r.c.styles, r.sent, r.width, r.answerQuery)
}

func (r *request) View() string {
	if r.state == requestViewing {
		if r.filterShown() {
			return fitBlock("  "+r.filter.View(), r.width, 1) + "\n" + r.view.view(r.answerText)
		}
		return r.view.view(r.answerText)
	}
	if r.hist.listing {
		content, _ := r.listContent()
		return r.hist.list.view(content)
	}
	content, _ := r.content()
	return r.pane.view(content)
}

// content is every line of the fields, and the line to keep in sight: the
// focused field's, or while sending the line that says so.
func (r *request) content() (string, int) {
	var b strings.Builder
	focusLine := 0
	for i := range reqFieldCount {
		if i == r.focus && r.state == requestEditing {
			focusLine = strings.Count(b.String(), "\n") + r.cursorRow(i)
		}
		r.fieldRows(&b, i)
	}
	b.WriteString("\n")
	if r.state == requestSending {
		focusLine = strings.Count(b.String(), "\n")
	}
	r.footer(&b)
	return b.String(), focusLine
}

// fieldRows is field i: its name (marked when focused) beside its value's
// lines, its error, and under the URL what recall offers.
func (r *request) fieldRows(b *strings.Builder, i int) {
	s := r.c.styles
	name := reqFieldNames[i]
	marker, nameStyle := "  ", s.FieldName
	if i == r.focus && r.state == requestEditing {
		marker, nameStyle = s.Focused.Render("› "), s.Focused
	}
	indent := strings.Repeat(" ", reqLabelWidth+2)
	for j, l := range strings.Split(r.fieldView(i), "\n") {
		if j == 0 {
			b.WriteString(marker + nameStyle.Render(name) + strings.Repeat(" ", reqLabelWidth-len(name)) + l + "\n")
		} else {
			b.WriteString(indent + l + "\n")
		}
	}
	if e := r.errs[i]; e != "" {
		b.WriteString(indentWrapped("✗ "+e, reqLabelWidth+2, r.width, s.Error.Render))
	}
	if i == reqFieldURL {
		b.WriteString(r.recallLines())
	}
}

// fieldView is field i's value as it shows: a choice between arrows, or
// the text field's view.
func (r *request) fieldView(i int) string {
	s := r.c.styles
	switch i {
	case reqFieldKey:
		return r.keyChoice()
	case reqFieldMethod:
		return s.Subtle.Render("‹ ") + s.Value.Render(requestMethods[r.method]) + s.Subtle.Render(" ›")
	case reqFieldURL:
		return r.url.View()
	case reqFieldAudience:
		return r.audience.View()
	case reqFieldHeaders:
		return r.headers.View()
	case reqFieldBody:
		return r.body.View()
	}
	return ""
}

// footer is the line under the fields: sending, why the last request got
// no answer, or how to send.
func (r *request) footer(b *strings.Builder) {
	s := r.c.styles
	switch {
	case r.state == requestSending:
		b.WriteString("  " + r.spinner() + " " + s.Subtle.Render("Sending… esc cancels"+waitingNote(r.wait.since, r.c.now)) + "\n")
	case r.general != "":
		b.WriteString(indentWrapped("✗ "+r.general, 2, r.width, s.Error.Render))
	default:
		b.WriteString(indentWrapped("ctrl+s sends with the key's token (renewed once if the API refuses it)", 2, r.width, s.Subtle.Render))
	}
}

// cursorRow is the row of field i's cursor below its first line (a text
// area's cursor line in sight, else 0).
func (r *request) cursorRow(i int) int {
	var ta *textarea.Model
	switch i {
	case reqFieldHeaders:
		ta = &r.headers
	case reqFieldBody:
		ta = &r.body
	default:
		return 0
	}
	return min(max(0, ta.Line()-ta.ScrollYOffset()), max(0, ta.Height()-1))
}

// keyChoice renders the key field: the chosen key between arrows, and
// where it stands among the others.
func (r *request) keyChoice() string {
	s := r.c.styles
	if r.keys.len() == 0 {
		return s.Subtle.Render("no API keys yet")
	}
	name := r.shownLabel()
	if r.keys.len() < 2 {
		return s.Value.Render(name)
	}
	where := fmt.Sprintf("  %d of %d (←/→)", r.key+1, r.keys.len())
	if reqLabelWidth+2+lipgloss.Width(name)+4+len([]rune(where)) > r.width {
		where = ""
	}
	return s.Subtle.Render("‹ ") + s.Value.Render(name) + s.Subtle.Render(" ›"+where)
}

func (r *request) ShortHelp() []key.Binding {
	k := r.c.keys
	switch {
	case r.state == requestSending:
		return []key.Binding{k.Cancel, k.ForceQuit}
	case r.filtering:
		return []key.Binding{k.FilterKeep, k.FilterClear, k.PageDown, k.PageUp, k.ForceQuit}
	case r.state == requestViewing && r.hasNextPage():
		return []key.Binding{k.Edit, k.NextPage, k.Send, k.Filter, k.ScrollDown, k.ScrollUp, k.PageDown, k.Top, k.Bottom, k.CopyCurl, k.Quit}
	case r.state == requestViewing:
		return []key.Binding{k.Edit, k.Send, k.Filter, k.ScrollDown, k.ScrollUp, k.PageDown, k.Top, k.Bottom, k.CopyCurl, k.Quit}
	case r.hist.naming:
		return []key.Binding{k.Submit, k.Cancel, k.ForceQuit}
	case r.hist.listing:
		return []key.Binding{k.Up, k.Down, k.Enter, k.CopyCurl, k.Rename, k.Delete, k.Back, k.Quit}
	case isChoice(r.focus):
		return []key.Binding{k.Send, k.Choose, k.TabNext, k.Back, k.ForceQuit}
	case r.focus == reqFieldURL:
		return []key.Binding{k.Send, k.Recall, k.Requests, k.TabNext, k.TabPrev, k.Back, k.ForceQuit}
	}
	return []key.Binding{k.Send, k.TabNext, k.TabPrev, k.Back, k.ForceQuit}
}

func (r *request) FullHelp() [][]key.Binding {
	k := r.c.keys
	return [][]key.Binding{{k.TabNext, k.TabPrev, k.Choose, k.Send, k.NextPage}, {k.Recall, k.Requests, k.CopyCurl, k.Rename, k.Delete},
		{k.ScrollDown, k.ScrollUp, k.PageDown, k.PageUp, k.Top, k.Bottom, k.Filter, k.Edit}}
}
