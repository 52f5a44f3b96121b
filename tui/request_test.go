package tui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shipkey/shipkey/auth"
)

// apiRig is an API on loopback for the Request screen, and the token
// source its client sends from: the API accepts only the tokens it was
// told to (accept), as an API that checks them at the authorization server
// does; a forced renewal hands out the next token.
type apiRig struct {
	srv      *httptest.Server
	mu       sync.Mutex
	token    int             // the source's current token: "tok-N"
	accepted map[string]bool // tokens the API accepts
	forced   atomic.Int32    // forced renewals
	requests atomic.Int32    // requests that reached the API
	started  chan struct{}   // /hang: closed when its request arrived
	ended    chan struct{}   // /hang: closed when its request's context ended
	lastBody string
	lastTo   APITokenFor // whose token the last client was built for
}

const rigJSON = `{"shipments":[{"id":1,"ref":"A1","weight":2.5},{"id":2,"ref":"B2","weight":0.75}],"next":null}`

func newAPIRig(t *testing.T) *apiRig {
	t.Helper()
	rig := &apiRig{accepted: map[string]bool{"tok-0": true}, started: make(chan struct{}), ended: make(chan struct{})}
	rig.srv = httptest.NewServer(http.HandlerFunc(rig.serve))
	t.Cleanup(rig.srv.Close)
	return rig
}

// revoke makes the API refuse every token handed out so far; allowNext
// says whether the renewed one is accepted.
func (rig *apiRig) revoke(allowNext bool) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	clear(rig.accepted)
	if allowNext {
		rig.accepted[fmt.Sprint("tok-", rig.token+1)] = true
	}
}

// seen is the last accepted request: method, path, Content-Type, X-Trace
// and body.
func (rig *apiRig) seen() string {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.lastBody
}

// to is whose token the last client was built for.
func (rig *apiRig) to() APITokenFor {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.lastTo
}

func (rig *apiRig) source(_ context.Context, force bool) (*auth.TokenSet, error) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if force {
		rig.forced.Add(1)
		rig.token++
	}
	return &auth.TokenSet{AccessToken: fmt.Sprint("tok-", rig.token), TokenType: "Bearer"}, nil
}

// client is the config's api: auth's API client over rig.source, telling
// renewed of each forced renewal, as cmd's is.
func (rig *apiRig) client(to APITokenFor, renewed func()) (*http.Client, error) {
	rig.mu.Lock()
	rig.lastTo = to
	rig.mu.Unlock()
	return auth.NewAPIClient(auth.APIOptions{Source: func(ctx context.Context, force bool) (*auth.TokenSet, error) {
		if force {
			renewed()
		}
		return rig.source(ctx, force)
	}})
}

func (rig *apiRig) serve(w http.ResponseWriter, r *http.Request) {
	rig.requests.Add(1)
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rig.mu.Lock()
	ok := rig.accepted[tok]
	rig.mu.Unlock()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shipping", error="invalid_token", error_description="The access token is not active"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid_token"}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	rig.mu.Lock()
	rig.lastBody = r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + r.Header.Get("X-Trace") + " " + string(body)
	rig.mu.Unlock()
	switch r.URL.Path {
	case "/hang":
		close(rig.started)
		<-r.Context().Done()
		close(rig.ended)
		return
	case "/hostile":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "evil\x1b[2J\x1b[H copy\x1b]52;c;ZXZpbA==\x07me \u009b31mred \u202eesrever over\rwritten\x7f\n")
		return
	case "/pages":
		// Three pages, each linking the next (relative, as many APIs
		// do); ?away links another origin instead.
		page := 1
		_, _ = fmt.Sscan(r.URL.Query().Get("page"), &page)
		switch {
		case r.URL.Query().Has("away"):
			w.Header().Set("Link", `<http://203.0.113.9/pages?page=2>; rel="next"`)
		case page < 3:
			w.Header().Set("Link", fmt.Sprintf(`</pages?page=%d>; rel="next", </pages?page=3>; rel="last"`, page+1))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `[{"page":%d}]`, page)
		return
	case "/large":
		w.Header().Set("Content-Type", "application/json")
		n := 300
		if r.URL.Query().Has("huge") {
			n = 10000
		}
		_, _ = io.WriteString(w, "[")
		for i := range n {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			_, _ = fmt.Fprintf(w, `{"id":%d,"name":"shipment-%05d","status":"in_transit"}`, i, i)
		}
		_, _ = io.WriteString(w, "]")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req-42")
	w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT") // not among the headers shown
	_, _ = io.WriteString(w, rigJSON)
}

// requestHarness is the app with keys "demo" and "staging", the Request
// screen's client sending to rig, whose URL is the default URL.
func requestHarness(t *testing.T, rig *apiRig) *harness {
	t.Helper()
	return newHarnessWith(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		f.add("staging", "ops", t0.Add(-time.Hour))
	}, func(c *config) {
		c.api = rig.client
		c.apiURL = rig.srv.URL
	})
}

// setURL puts u in the URL field (focus on it).
func (h *harness) setURL(u string) {
	h.t.Helper()
	r := h.m.request
	h.run(r.focusOn(reqFieldURL))
	r.url.SetValue("")
	h.typeText(u)
}

// fixedURL replaces the rig's random port in v, for golden files.
func fixedURL(v string, rig *apiRig) string {
	return strings.ReplaceAll(v, rig.srv.URL, "http://127.0.0.1:8443")
}

// 4 opens the Request screen for the current key with the default URL;
// the fields fit 80×24 and 60×15, and 40×10 without breaking.
func TestRequestScreenOpens(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h := requestHarness(t, rig)
			h.send(windowSize(size[0], size[1]))
			h.press("4")
			if h.m.active != screenRequest || h.m.request.label() != "demo" || h.m.request.url.Value() != rig.srv.URL {
				t.Fatalf("screen %v, key %q, URL %q", h.m.active, h.m.request.label(), h.m.request.url.Value())
			}
			h.mustShow("Request", "Key", "demo", "Audience", "GET")
			if size[1] >= 15 {
				h.mustShow("Body")
			}
			v := fixedURL(h.view(), rig)
			requireFits(t, v, size[0], size[1])
			if size[0] >= 60 {
				golden.RequireEqual(t, []byte(v))
			}
		})
	}
}

// ctrl+s sends: the screen says it is sending, then shows the status, the
// chosen headers and the JSON body pretty-printed; goldens at 80×24 and
// 60×15, and 40×10 fits.
func TestRequestSendsAndShowsTheAnswer(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			h := requestHarness(t, rig)
			h.send(windowSize(size[0], size[1]))
			h.press("4")
			h.async()
			h.press("ctrl+s")
			if h.m.request.state != requestSending {
				t.Fatalf("state %v after ctrl+s", h.m.request.state)
			}
			h.mustShow("Sending…", "esc cancel")
			h.pump("the answer", func() bool { return h.m.request.state == requestViewing })
			h.mustShow("200 OK", "Content-Type: application/json")
			if size[1] >= 15 {
				h.mustShow("X-Request-Id: req-42", `"shipments": [`)
			}
			h.mustNotShow("Date:", "renewed")
			v := fixedURL(h.view(), rig)
			requireFits(t, v, size[0], size[1])
			if size[0] >= 60 {
				golden.RequireEqual(t, []byte(v))
			}
			// The body is reached by scrolling, every line of it.
			h.send(scrollKey("G"))
			h.mustShow(`"next": null`, moreAbove)
			requireFits(t, h.view(), size[0], size[1])
		})
	}
}

// Method, headers and body go out as typed; a body is JSON by default.
func TestRequestSendsMethodHeadersAndBody(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.press("4")
	h.run(h.m.request.focusOn(reqFieldMethod))
	h.send(tea.KeyPressMsg{Code: tea.KeyRight}) // POST
	h.setURL("/v1/shipments")
	h.press("tab")
	h.typeText("X-Trace: abc")
	h.press("tab")
	h.typeText(`{"ref": "A1"}`)
	h.press("ctrl+s")
	h.mustShow("200 OK", "POST "+rig.srv.URL+"/v1/shipments · key demo")
	if want := `POST /v1/shipments application/json abc {"ref": "A1"}`; rig.seen() != want {
		t.Fatalf("the API saw %q, want %q", rig.seen(), want)
	}
	// esc goes back to the fields with every value kept; ← picks staging.
	h.press("esc")
	r := h.m.request
	if r.state != requestEditing || r.url.Value() != "/v1/shipments" || r.body.Value() != `{"ref": "A1"}` || requestMethods[r.method] != "POST" {
		t.Fatalf("after esc: state %v, URL %q, body %q, method %s", r.state, r.url.Value(), r.body.Value(), requestMethods[r.method])
	}
	h.run(r.focusOn(reqFieldKey))
	h.send(tea.KeyPressMsg{Code: tea.KeyRight})
	if r.label() != "staging" {
		t.Fatalf("key %q after →", r.label())
	}
}

// What cannot be sent is said beside its field, and nothing is sent.
func TestRequestValidation(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	for _, c := range []struct {
		name, url, headers, body, want string
		field                          int
	}{
		{"no URL", "", "", "", "required", reqFieldURL},
		{"not http", "ftp://api.example.com/x", "", "", "is not an absolute http(s) URL", reqFieldURL},
		{"plain http", "http://api.example.com/x", "", "", "plain http", reqFieldURL},
		{"header", rig.srv.URL, "not a header", "", "is not a header", reqFieldHeaders},
		{"authorization", rig.srv.URL, "Authorization: Bearer x", "", "Authorization is the key's token", reqFieldHeaders},
		{"json", rig.srv.URL, "", "{not json", "not JSON", reqFieldBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := requestHarness(t, rig)
			h.press("4")
			h.setURL(c.url)
			h.m.request.headers.SetValue(c.headers)
			h.m.request.body.SetValue(c.body)
			before := rig.requests.Load()
			h.press("ctrl+s")
			r := h.m.request
			if r.state != requestEditing || r.focus != c.field || !strings.Contains(r.errs[c.field], c.want) {
				t.Fatalf("state %v, focus %d, errors %q; want %q on field %d", r.state, r.focus, r.errs, c.want, c.field)
			}
			h.mustShow("✗ ")
			if rig.requests.Load() != before {
				t.Fatal("a request was sent")
			}
		})
	}
	// Text with another Content-Type goes as it is.
	h := requestHarness(t, rig)
	h.press("4")
	h.m.request.headers.SetValue("Content-Type: text/plain")
	h.m.request.body.SetValue("{not json")
	h.press("ctrl+s")
	h.mustShow("200 OK")
}

// A token the API refuses as invalid is renewed once and the request sent
// again: the screen says so. A refusal after the renewal is shown, not
// retried.
func TestRequestRenewsOnceOn401(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(80, 24))
	h.press("4")
	rig.revoke(true)
	h.press("ctrl+s")
	h.mustShow("401 → renewed → 200 OK", `"shipments"`)
	if n := rig.forced.Load(); n != 1 {
		t.Fatalf("forced renewals %d, want 1", n)
	}
	golden.RequireEqual(t, []byte(fixedURL(h.view(), rig)))

	rig.revoke(false)
	before := rig.requests.Load()
	h.press("ctrl+s") // sends again from the answer
	h.mustShow("401 → renewed → 401 Unauthorized (not retried)", `WWW-Authenticate: Bearer realm="shipping", error="invalid_token"`)
	if n := rig.requests.Load() - before; n != 2 {
		t.Fatalf("%d requests reached the API, want 2 (one retry, never more)", n)
	}
	if n := rig.forced.Load(); n != 2 {
		t.Fatalf("forced renewals %d, want 2", n)
	}
}

// esc while the request hangs cancels it (the API sees its request end)
// and returns to the fields with every value kept; the late answer of a
// cancelled request is never shown.
func TestRequestEscCancelsAndKeepsTheValues(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.press("4")
	h.setURL("/hang")
	h.press("tab", "tab")
	h.typeText(`{"a":1}`)
	h.async()
	h.press("ctrl+s")
	h.pump("the request to reach the API", func() bool {
		select {
		case <-rig.started:
			return true
		default:
			return false
		}
	})
	h.press("esc")
	r := h.m.request
	if r.state != requestEditing || r.url.Value() != "/hang" || r.body.Value() != `{"a":1}` {
		t.Fatalf("after esc: state %v, URL %q, body %q", r.state, r.url.Value(), r.body.Value())
	}
	h.mustShow("Request cancelled")
	select {
	case <-rig.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the API's request did not end after esc")
	}
	// Its answer (an error) arrives and is dropped; the spinner stops.
	h.pump("the spinner to stop", func() bool { return h.m.req.inflight == 0 })
	h.mustShow("Request cancelled")
	if r.state != requestEditing {
		t.Fatalf("state %v after the cancelled answer", r.state)
	}
}

// An answer's control bytes (ESC, OSC 52, CR, C1, bidi, DEL) are shown as
// inert text, never sent to the terminal.
func TestRequestHostileBodyIsInert(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.press("4")
	h.setURL("/hostile")
	h.press("ctrl+s")
	v := h.view()
	for _, c := range v {
		if (c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u202e' {
			t.Fatalf("the view holds %U:\n%q", c, v)
		}
	}
	h.mustShow(`evil\x1b[2J\x1b[H`, `copy\x1b]52;c;ZXZpbA==\x07me`, `\u009b31mred`, `\u202eesrever`, "over written", `\x7f`)
}

// A large JSON answer is pretty-printed and scrolled to its end; one over
// maxAnswerBody is cut there, with a note, and shown as it came.
func TestRequestLargeBody(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(60, 15))
	h.press("4")
	h.setURL("/large")
	h.press("ctrl+s")
	h.mustShow("200 OK", moreBelow)
	h.send(scrollKey("G"))
	h.mustShow(`"name": "shipment-00299"`, moreAbove)
	h.mustNotShow(moreBelow)
	h.send(scrollKey("g"))
	h.send(scrollKey("pgdown"))
	h.mustShow(moreAbove, moreBelow)

	h.press("esc")
	h.setURL("/large?huge")
	h.press("ctrl+s")
	h.send(scrollKey("G"))
	h.mustShow("the first 256.0 KiB are shown; the rest was not read")
	// Cut JSON cannot be pretty-printed: it comes as it came, one long
	// line wrapped at the screen's width.
	if got := strings.Count(h.m.request.answerText, "\n"); got < 1000 {
		t.Fatalf("the cut body has %d lines on the screen", got)
	}
	requireFits(t, h.view(), 60, 15)
}

// A request that gets no answer says why in one line under the fields.
func TestRequestNoAnswer(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.press("4")
	h.setURL("http://127.0.0.1:1/x")
	h.press("ctrl+s")
	if h.m.request.state != requestEditing {
		t.Fatalf("state %v", h.m.request.state)
	}
	h.mustShow("✗ no answer: ", "connection refused")
}

// At 40×10, the line being typed in the body stays in sight, and so does
// the line saying the request is on its way.
func TestRequestFollowsTheCursorWhenSmall(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(40, 10))
	h.press("4")
	h.run(h.m.request.focusOn(reqFieldBody))
	for i, l := range []string{`{"a":`, `"b",`, `"c":`, `3}`} {
		if i > 0 {
			h.press("enter")
		}
		h.typeText(l)
		h.mustShow(l)
		requireFits(t, h.view(), 40, 10)
	}
	h.mustNotShow("✗")
}

// The URL starts as the chosen key's api_url and follows the key while it
// is untouched; a path goes after the key's api_url, as shipkey api puts
// it; a key with none (and no default) says how to give it one.
func TestRequestUsesTheKeysAPIURL(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := newHarnessWith(t, func(f *fakeStore) {
		k := f.add("demo", "demo", time.Time{})
		k.APIURL = rig.srv.URL + "/v2"
		f.keys["demo"] = k
		f.add("staging", "ops", t0.Add(-time.Hour))
	}, func(c *config) { c.api = rig.client })
	h.press("4")
	r := h.m.request
	if r.url.Value() != rig.srv.URL+"/v2" {
		t.Fatalf("URL %q, want the key's api_url", r.url.Value())
	}
	right := tea.KeyPressMsg{Code: tea.KeyRight}
	h.send(right) // staging: no api_url, no default
	if r.label() != "staging" || r.url.Value() != "" {
		t.Fatalf("key %q, URL %q", r.label(), r.url.Value())
	}
	h.send(right) // demo again
	if r.url.Value() != rig.srv.URL+"/v2" {
		t.Fatalf("URL %q back on demo", r.url.Value())
	}
	h.setURL("shipments?late=1")
	h.press("ctrl+s")
	h.mustShow("200 OK", "GET "+rig.srv.URL+"/v2/shipments?late=1")
	if got := rig.seen(); !strings.HasPrefix(got, "GET /v2/shipments ") {
		t.Fatalf("the API saw %q", got)
	}
	// What was typed stays when the key changes; staging has no base.
	h.press("esc")
	h.run(r.focusOn(reqFieldKey))
	h.send(right)
	h.press("ctrl+s")
	if r.url.Value() != "shipments?late=1" || !strings.Contains(r.errs[reqFieldURL], "a path needs the key's API URL (shipkey keys set staging --api-url URL)") {
		t.Fatalf("URL %q, error %q", r.url.Value(), r.errs[reqFieldURL])
	}
}

// In the answer, / filters the body: only the lines holding the text,
// whatever its case, are shown, with how many; q and 4 are typed into the
// filter, not obeyed; none holding it says "no match"; esc clears the
// filter, and a second esc goes back to the fields. Golden at 80×24.
func TestRequestFiltersTheBody(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(80, 24))
	h.press("4")
	h.setURL("/large")
	h.press("ctrl+s")
	h.mustShow("200 OK", `"name": "shipment-00000"`)
	h.mustNotShow(`"name": "shipment-00299"`) // below the screen
	r := h.m.request

	h.press("/")
	if !r.filtering || !h.m.screen().Capturing() {
		t.Fatalf("filtering %v, capturing %v after /", r.filtering, h.m.screen().Capturing())
	}
	h.typeText("zzq4")
	if h.m.active != screenRequest || r.filter.Value() != "zzq4" {
		t.Fatalf("screen %v, filter %q: q and 4 must be typed", h.m.active, r.filter.Value())
	}
	h.mustShow(`no match: no line of the body holds "zzq4" · esc clears the filter`)
	h.mustNotShow(`"id": 0`)
	requireFits(t, h.view(), 80, 24)

	h.press("esc")
	if r.filtering || r.filter.Value() != "" || r.state != requestViewing {
		t.Fatalf("after esc: filtering %v, filter %q, state %v", r.filtering, r.filter.Value(), r.state)
	}
	h.mustShow(`"id": 0`)
	h.mustNotShow("no match", "/ zzq4")

	h.press("/")
	h.typeText("SHIPMENT-0029")
	h.mustShow(`10 of 1502 lines hold "shipment-0029"`, `"name": "shipment-00290"`, `"name": "shipment-00299"`)
	h.mustNotShow(`"name": "shipment-00000"`, `"id":`, moreBelow)
	v := h.view()
	requireFits(t, v, 80, 24)
	golden.RequireEqual(t, []byte(fixedURL(v, rig)))

	// enter keeps the filter and gives the keys back: esc clears it, then
	// goes back to the fields.
	h.press("enter")
	if r.filtering || h.m.screen().Capturing() {
		t.Fatal("enter did not leave the filter field")
	}
	h.mustShow(`"name": "shipment-00299"`, "/ SHIPMENT-0029")
	h.press("esc")
	if r.state != requestViewing || r.filter.Value() != "" {
		t.Fatalf("after esc: state %v, filter %q", r.state, r.filter.Value())
	}
	h.mustShow(`"name": "shipment-00000"`)
	h.press("esc")
	if r.state != requestEditing {
		t.Fatalf("state %v after the second esc", r.state)
	}
}

// The Audience field goes to the API client with the key (the client then
// exchanges the key's token for one for that service, as shipkey api
// --audience); empty, the key's own token is asked for; the answer says
// which. An audience of two words is refused beside its field.
func TestRequestAudienceReachesTheClient(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(80, 24))
	h.press("4")
	h.mustShow("Audience")
	h.press("ctrl+s")
	h.mustShow("200 OK", "· key demo")
	h.mustNotShow("audience")
	if rig.to() != (APITokenFor{Label: "demo"}) {
		t.Fatalf("the client was built for %+v", rig.to())
	}
	h.press("esc")
	h.run(h.m.request.focusOn(reqFieldAudience))
	h.typeText(" billing ")
	h.press("ctrl+s")
	h.mustShow("200 OK", "· key demo · audience billing")
	if rig.to() != (APITokenFor{Label: "demo", Audience: "billing"}) {
		t.Fatalf("the client was built for %+v", rig.to())
	}
	h.press("esc")
	h.typeText("x y")
	before := rig.requests.Load()
	h.press("ctrl+s")
	r := h.m.request
	if r.state != requestEditing || r.focus != reqFieldAudience || !strings.Contains(r.errs[reqFieldAudience], "one word") {
		t.Fatalf("state %v, focus %d, errors %q", r.state, r.focus, r.errs)
	}
	if rig.requests.Load() != before {
		t.Fatal("a request was sent")
	}
}
