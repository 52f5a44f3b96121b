package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// APIClient builds the HTTP client the Request screen sends label's
// requests with: the client of `shipkey api` (cmd's factory), which takes
// the key's token from the store's token source, sends it (with a DPoP
// proof when the token is bound), and renews it once, by force, when the
// API refuses it as invalid. renewed is called at each forced renewal, so
// that the screen can say a 401 came first.
type APIClient func(to APITokenFor, renewed func()) (*http.Client, error)

// APITokenFor says whose token the Request screen sends: Label's own, or
// with Audience, one for that other service obtained by token exchange
// with it (RFC 8693, as shipkey api --audience).
type APITokenFor struct {
	Label, Audience string
}

// apiCall is a request the Request screen sends.
type apiCall struct {
	label, audience, method, url string
	header                       http.Header
	body                         string
}

// what is the request in a line: "GET https://…/v1/shipments".
func (c apiCall) what() text.Clean { return text.Cleanf("%s %s", c.method, c.url) }

// whose is the token the request went with: "key demo", "key demo ·
// audience billing".
func (c apiCall) whose() text.Clean {
	if c.audience != "" {
		return text.Cleanf("key %s · audience %s", c.label, c.audience)
	}
	return text.Cleanf("key %s", c.label)
}

// maxAnswerBody bounds what is read of an answer's body: the rest is not
// read, and the screen says so.
const maxAnswerBody = 256 << 10

// answerHeaders are the response headers the screen shows, in this order.
var answerHeaders = []string{"Content-Type", "Content-Length", "Location", "Link", "WWW-Authenticate", "DPoP-Nonce", "Retry-After", "ETag", "Cache-Control", "X-Request-Id"}

// apiAnswer is an answer as the screen shows it: every text in it is
// clean, cleaned once when it arrived.
type apiAnswer struct {
	status  text.Clean // "200 OK"
	code    int
	renewed bool // the token was renewed by force: the API had refused it
	elapsed time.Duration
	headers []text.Clean // "Name: value"
	body    []string     // the body's lines (JSON pretty-printed), cut from a text.Clean
	note    text.Clean   // what of the body is not shown, and why
	// next is the next page (Link: <…>; rel="next") as an absolute URL on
	// the request's own origin, "" when there is none; nextAway says a
	// next page on another origin, not followed with the key's token.
	next     string
	nextAway text.Clean
}

// sendCmd sends call with its key's token through the API client and
// reads the answer (at most maxAnswerBody of its body).
func (m *Model) sendCmd(ctx context.Context, seq int, call apiCall) tea.Cmd {
	build, now := m.cfg.api, m.cfg.now
	return func() tea.Msg {
		msg := requestDoneMsg{seq: seq}
		if build == nil {
			msg.err = errors.New("this app was started without an API client")
			return msg
		}
		var forced atomic.Int32
		client, err := build(APITokenFor{Label: call.label, Audience: call.audience}, func() { forced.Add(1) })
		if err != nil {
			msg.err = err
			return msg
		}
		var body io.Reader
		if call.body != "" {
			body = strings.NewReader(call.body) // sent again whole after a renewal
		}
		req, err := http.NewRequestWithContext(ctx, call.method, call.url, body)
		if err != nil {
			msg.err = err
			return msg
		}
		req.Header = call.header.Clone()
		start := now()
		resp, err := client.Do(req)
		if err != nil {
			msg.err = err
			return msg
		}
		defer resp.Body.Close()
		data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBody+1))
		msg.answer = newAnswer(resp, data, readErr, forced.Load() > 0, now().Sub(start))
		return msg
	}
}

// newAnswer reads what the screen shows of resp, whose body began with
// data (more than maxAnswerBody: there is more).
func newAnswer(resp *http.Response, data []byte, readErr error, renewed bool, elapsed time.Duration) *apiAnswer {
	a := &apiAnswer{status: text.Sanitize(resp.Status).Or(text.Cleanf("%d", resp.StatusCode)), code: resp.StatusCode, renewed: renewed, elapsed: elapsed}
	a.headers = answerHeaderLines(resp.Header)
	a.next, a.nextAway = nextPage(resp)
	cut := len(data) > maxAnswerBody
	if cut {
		data = data[:maxAnswerBody]
	}
	a.note = bodyNote(int64(len(data)), cut, readErr, resp.ContentLength)
	if cut || readErr != nil {
		data = dropCutRune(data)
	}
	if len(data) == 0 {
		return a
	}
	if !utf8.Valid(data) {
		a.note = text.Cleanf("%s of %s, not shown (not text)", text.Bytes(int64(len(data))), resp.Header.Get("Content-Type"))
		return a
	}
	whole := !cut && readErr == nil
	a.body = bodyLines(data, whole && (isJSONType(resp.Header.Get("Content-Type")) || looksJSON(data)))
	return a
}

// nextPage is the answer's next page by its Link header, when it is on the
// origin the request went to (the key's token goes nowhere else: as
// shipkey api --paginate); else, the other origin, said.
func nextPage(resp *http.Response) (next string, away text.Clean) {
	link := auth.NextLink(resp.Header)
	if link == "" || resp.Request == nil || resp.Request.URL == nil {
		return "", text.Clean{}
	}
	base := resp.Request.URL
	u, err := base.Parse(strings.TrimSpace(link))
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "", text.Cleanf("the next page's link %s is not an http(s) URL: not followed", link)
	case u.Scheme != base.Scheme || u.Host != base.Host:
		return "", text.Cleanf("the next page is on %s://%s, not where this request went: not followed with the key's token", u.Scheme, u.Host)
	}
	return u.String(), text.Clean{}
}

// answerHeaderLines are the headers of answerHeaders that h holds, one
// "Name: value" a value, cleaned.
func answerHeaderLines(h http.Header) []text.Clean {
	var lines []text.Clean
	for _, name := range answerHeaders {
		for _, v := range h.Values(name) {
			lines = append(lines, text.Cleanf("%s: %s", name, v))
		}
	}
	return lines
}

// bodyNote says what of a body the screen does not show: where it broke
// off, or what was not read (shown bytes read; contentLength when the
// answer stated it).
func bodyNote(shown int64, cut bool, readErr error, contentLength int64) text.Clean {
	switch {
	case readErr != nil:
		return text.Cleanf("the body broke off after %s: %v", text.Bytes(shown), readErr)
	case cut && contentLength > 0:
		return text.Cleanf("the first %s of %s are shown; the rest was not read", text.Bytes(maxAnswerBody), text.Bytes(contentLength))
	case cut:
		return text.Cleanf("the first %s are shown; the rest was not read", text.Bytes(maxAnswerBody))
	}
	return text.Clean{}
}

// dropCutRune drops a character cut in two at the end of data.
func dropCutRune(data []byte) []byte {
	for n := 0; n < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); n++ {
		data = data[:len(data)-1]
	}
	return data
}

// bodyLines is a text body's lines, cleaned; indented first when it is
// whole JSON (asJSON) that parses.
func bodyLines(data []byte, asJSON bool) []string {
	body := string(data)
	if asJSON {
		var pretty bytes.Buffer
		if json.Indent(&pretty, data, "", "  ") == nil {
			body = pretty.String()
		}
	}
	return strings.Split(strings.TrimRight(text.SanitizeLines(body).String(), "\n "), "\n")
}

// isJSONType reports whether a Content-Type is JSON (application/json,
// application/problem+json, …).
func isJSONType(ct string) bool {
	ct, _, _ = strings.Cut(strings.ToLower(ct), ";")
	ct = strings.TrimSpace(ct)
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// looksJSON reports whether data starts as a JSON object or array.
func looksJSON(data []byte) bool {
	d := bytes.TrimSpace(data)
	return len(d) > 0 && (d[0] == '{' || d[0] == '[')
}

// statusLine is the answer's status as it came about: "200 OK", or after
// a refusal the renewal fixed, "401 → renewed → 200 OK"; a refusal after
// the renewal is the answer, not retried.
func (a *apiAnswer) statusLine() text.Clean {
	if !a.renewed {
		return a.status
	}
	s := text.Concat(text.Trusted("401 → renewed → "), a.status)
	if a.code == http.StatusUnauthorized {
		s = text.Concat(s, text.Trusted(" (not retried)"))
	}
	return s
}

// render lays the answer out width cells wide: the request, the status,
// the headers, and the body with its long lines wrapped; with a query
// (lower-cased), only the body's lines holding it, or a line saying none
// does.
func (a *apiAnswer) render(s *Styles, sent apiCall, width int, query string) string {
	var b strings.Builder
	b.WriteString(indentWrapped(text.Concat(sent.what(), text.Trusted(" · "), sent.whose()).String(), 2, width, s.Subtle.Render))
	st := s.OK
	if a.code < 200 || a.code > 299 {
		st = s.Error
	}
	b.WriteString("  " + show(st, a.statusLine()) + s.Subtle.Render(fmt.Sprintf(" · %d ms", a.elapsed.Milliseconds())) + "\n")
	for _, h := range a.headers {
		name, value, _ := strings.Cut(h.String(), ": ")
		b.WriteString(indentWrapped(s.FieldName.Render(name+":")+" "+value, 2, width, s.Value.Render))
	}
	switch {
	case a.next != "" && sent.method == http.MethodGet:
		b.WriteString(indentWrapped("ctrl+n asks for the next page (its Link)", 2, width, s.Subtle.Render))
	case !a.nextAway.IsEmpty():
		b.WriteString(indentWrapped("— "+a.nextAway.String(), 2, width, s.Warn.Render))
	}
	b.WriteString("\n")
	body := a.body
	if query != "" {
		body = a.matching(query)
		q := text.Cleanf("%q", text.Sanitize(query)).String()
		if len(body) == 0 {
			b.WriteString(indentWrapped("no match: no line of the body holds "+q+" · esc clears the filter", 2, width, s.Warn.Render))
		} else {
			b.WriteString(indentWrapped(fmt.Sprintf("%d of %d lines hold %s", len(body), len(a.body), q), 2, width, s.Subtle.Render))
		}
	}
	w := max(1, width-2)
	for _, l := range body {
		for _, part := range strings.Split(ansi.Hardwrap(l, w, true), "\n") {
			b.WriteString("  " + part + "\n")
		}
	}
	if len(a.body) == 0 && a.note.IsEmpty() && query == "" {
		b.WriteString(s.Subtle.Render("  (no body)") + "\n")
	}
	if !a.note.IsEmpty() {
		b.WriteString(indentWrapped("— "+a.note.String(), 2, width, s.Warn.Render))
	}
	return b.String()
}

// matching is the body's lines that hold query (lower-cased), whatever
// their case.
func (a *apiAnswer) matching(query string) []string {
	var out []string
	for _, l := range a.body {
		if strings.Contains(strings.ToLower(l), query) {
			out = append(out, l)
		}
	}
	return out
}

// requestError is the one line for a request that got no answer: what the
// token source or the network said.
func requestError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, store.ErrLoginNeeded) {
		return text.Cleanf("the key needs a new login (1, then l): %v", err).String()
	}
	return text.Cleanf("no answer: %v", err).String()
}
