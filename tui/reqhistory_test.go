package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/shipkey/shipkey/store"
)

// historyHarness is requestHarness with the Request screen's history in
// the file at path: two harnesses on one path are the app before and after
// a restart.
func historyHarness(t *testing.T, rig *apiRig, path string) *harness {
	t.Helper()
	return newHarnessWith(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		f.add("staging", "ops", t0.Add(-time.Hour))
		f.requests = store.NewRequestHistory(path, f.clock.Now)
	}, func(c *config) {
		c.api = rig.client
		c.apiURL = rig.srv.URL
	})
}

// sendRequest fills the fields (method by →, URL, headers, body) and sends
// them, then goes back to the fields.
func (h *harness) sendRequest(method string, url, headers, body string) {
	h.t.Helper()
	r := h.m.request
	h.run(r.focusOn(reqFieldMethod))
	for requestMethods[r.method] != method {
		h.send(tea.KeyPressMsg{Code: tea.KeyRight})
	}
	h.setURL(url)
	r.headers.SetValue(headers)
	r.body.SetValue(body)
	h.press("ctrl+s")
	h.mustShow("200 OK")
	h.press("esc")
}

// fields is the Request screen's fields in a line.
func (h *harness) fields() string {
	r := h.m.request
	return requestMethods[r.method] + " " + r.url.Value() + " [" + r.headers.Value() + "] " + r.body.Value()
}

// Every request sent is kept; after a restart, ↑ in the URL field recalls
// the key's newest, ↑ again older ones, ↓ newer ones, and ↓ past the
// newest gives back what was typed. ↓ on another field still moves to the
// next field. Golden at 80×24; 40×10 fits.
func TestRequestHistoryRecallsAfterARestart(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	path := filepath.Join(t.TempDir(), store.RequestsFile)
	h := historyHarness(t, rig, path)
	h.press("4")
	h.sendRequest("GET", "/v1/shipments", "", "")
	h.sendRequest("POST", "/v1/shipments", "X-Trace: abc", `{"ref": "A1"}`)
	h.sendRequest("DELETE", "/v1/shipments/7", "", "")

	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		h := historyHarness(t, rig, path) // the app started again
		h.send(windowSize(size[0], size[1]))
		h.press("4")
		r := h.m.request
		h.press("down") // on the Key field: the next field, as before
		if r.focus != reqFieldAudience {
			t.Fatalf("↓ on the Key field: focus %d", r.focus)
		}
		h.setURL("/typed")
		for i, want := range []string{
			"DELETE /v1/shipments/7 [] ",
			`POST /v1/shipments [X-Trace: abc] {"ref": "A1"}`,
			"GET /v1/shipments [] ",
			"GET /v1/shipments [] ", // the oldest stays
		} {
			h.press("up")
			if got := h.fields(); got != want {
				t.Fatalf("↑ %d: %q, want %q", i+1, got, want)
			}
		}
		h.press("down")
		h.mustShow("history 2 of 3 · ↑ older")
		requireFits(t, h.view(), size[0], size[1])
		if size[0] == 80 {
			golden.RequireEqual(t, []byte(fixedURL(h.view(), rig)))
		}
		h.press("down", "down")
		if got := h.fields(); got != "GET /typed [] " {
			t.Fatalf("past the newest: %q, want what was typed", got)
		}
		h.mustNotShow("↑ older")
		// The other key has its own history: none.
		h.run(r.focusOn(reqFieldKey))
		h.send(tea.KeyPressMsg{Code: tea.KeyRight})
		h.run(r.focusOn(reqFieldURL))
		before := h.fields()
		h.press("up")
		if h.fields() != before {
			t.Fatalf("staging recalled %q", h.fields())
		}
		if size[0] == 80 {
			continue
		}
		// A recalled request, edited, is sent as a new one.
		h.run(r.focusOn(reqFieldKey))
		h.send(tea.KeyPressMsg{Code: tea.KeyLeft})
		h.run(r.focusOn(reqFieldURL))
		h.press("up")
		h.typeText("?x=1")
		h.mustNotShow("↑ older")
		h.press("ctrl+s")
		h.mustShow("200 OK")
		if s := r.sent; s.method != "DELETE" || s.url != rig.srv.URL+"/v1/shipments/7?x=1" {
			t.Fatalf("sent %s %s", s.method, s.url)
		}
	}
}

// What carries a credential never reaches the history's file: a header
// named like one or whose value is a token, the URL's user and token
// parameters, a body with a password; recalled, the screen says what was
// not kept.
func TestRequestHistoryKeepsNoCredential(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	dir := t.TempDir()
	h := historyHarness(t, rig, filepath.Join(dir, store.RequestsFile))
	h.send(windowSize(80, 24))
	h.press("4")
	h.sendRequest("POST", "/v1/login?access_token=tok-in-url&page=2",
		"X-Api-Key: key-value-1\nCookie: sid=cookie-value-2\nX-Forwarded: Bearer bearer-value-3\nX-Trace: abc",
		`{"user":"u","password":"pass-value-4"}`)
	data, err := os.ReadFile(filepath.Join(dir, store.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"tok-in-url", "key-value-1", "cookie-value-2", "bearer-value-3", "pass-value-4", "X-Api-Key:", "Cookie:", "password", "tok-0"} {
		if strings.Contains(string(data), v) {
			t.Errorf("the history file holds %q:\n%s", v, data)
		}
	}
	if !strings.Contains(string(data), "X-Trace: abc") {
		t.Errorf("the history lost the harmless header:\n%s", data)
	}
	h.run(h.m.request.focusOn(reqFieldURL))
	h.press("up")
	if got := h.fields(); got != "POST /v1/login?page=2 [X-Trace: abc] " {
		t.Fatalf("recalled %q", got)
	}
	h.mustShow("not kept in the history: the X-Api-Key header, the Cookie header")
	if want := "not kept in the history: the X-Api-Key header, the Cookie header, the X-Forwarded header, the query parameter access_token, the body (it holds a credential-like field)"; h.m.request.hist.note.String() != want {
		t.Fatalf("note %q, want %q", h.m.request.hist.note, want)
	}
}

// ctrl+r lists the key's requests; e names one (saved, listed first), d
// forgets one, enter puts one in the fields, ctrl+y copies one as a
// shipkey curl command line. Golden at 80×24; 40×10 fits.
func TestRequestListSavesAndCopies(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := historyHarness(t, rig, filepath.Join(t.TempDir(), store.RequestsFile))
	h.send(windowSize(80, 24))
	h.press("4")
	h.press("ctrl+r")
	h.mustShow("No requests of key demo yet")
	h.press("esc")
	h.sendRequest("GET", "/v1/shipments", "", "")
	h.clock.Advance(time.Minute)
	h.sendRequest("POST", "/v1/shipments", "X-Trace: abc", `{"ref": "A1"}`)
	h.press("ctrl+r")
	r := h.m.request
	if !r.hist.listing || h.m.screen().Capturing() {
		t.Fatalf("listing %v, capturing %v", r.hist.listing, h.m.screen().Capturing())
	}
	h.mustShow("Key demo: 0 saved, 2 sent", "POST /v1/shipments", "GET /v1/shipments")
	h.press("e")
	if !h.m.screen().Capturing() {
		t.Fatal("the name field does not take text")
	}
	h.typeText("create A1")
	h.press("enter")
	h.mustShow("Key demo: 1 saved, 2 sent", "★ create A1 · POST /v1/shipments")
	golden.RequireEqual(t, []byte(fixedURL(h.view(), rig)))

	h.press("ctrl+y")
	want := "shipkey curl --key demo -- -sS -X POST -H 'Accept: application/json' -H 'Content-Type: application/json' -H 'X-Trace: abc' --data-raw '{\"ref\": \"A1\"}' " + rig.srv.URL + "/v1/shipments"
	if got := h.native[len(h.native)-1]; got != want {
		t.Fatalf("copied\n%s\nwant\n%s", got, want)
	}
	h.mustShow("Copied the shipkey curl command")

	h.press("down", "down") // the GET
	h.press("enter")
	if r.hist.listing || h.fields() != "GET /v1/shipments [] " || r.focus != reqFieldURL {
		t.Fatalf("after enter: listing %v, fields %q, focus %d", r.hist.listing, h.fields(), r.focus)
	}
	h.press("ctrl+r")
	h.press("down", "down")
	h.press("d")
	h.mustShow("Key demo: 1 saved, 1 sent")
	h.mustNotShow("GET /v1/shipments")
	h.send(windowSize(40, 10))
	requireFits(t, h.view(), 40, 10)
	h.press("esc")
	if r.hist.listing || !h.m.screen().Capturing() {
		t.Fatal("esc did not go back to the fields")
	}
}

// ctrl+y copies the fields, or the answer's request, as a shipkey curl
// command line: the label and every word shell-quoted, the audience as
// --audience, no token; a credential header is left out and the toast
// says so. Fields that cannot be sent are not copied.
func TestRequestCopyAsCurl(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := newHarnessWith(t, func(f *fakeStore) {
		f.add("prod eu", "demo", time.Time{})
	}, func(c *config) {
		c.api = rig.client
		c.apiURL = rig.srv.URL
	})
	h.send(windowSize(80, 24))
	h.press("4")
	r := h.m.request
	h.run(r.focusOn(reqFieldAudience))
	h.typeText("billing")
	h.setURL("/v1/it's")
	r.headers.SetValue("X-Api-Key: secret-1\nX-Trace: a b")
	h.press("ctrl+y")
	want := "shipkey curl --key 'prod eu' --audience billing -- -sS -H 'Accept: application/json' -H 'X-Trace: a b' '" + rig.srv.URL + "/v1/it'\\''s'"
	if got := h.native[len(h.native)-1]; got != want {
		t.Fatalf("copied\n%s\nwant\n%s", got, want)
	}
	h.mustShow("Copied the shipkey curl command (without the X-Api-Key header)")
	for _, c := range h.native {
		if strings.Contains(c, "secret-1") || strings.Contains(c, "tok-") {
			t.Fatalf("a credential was copied: %q", c)
		}
	}
	// From the answer: the request it answers.
	r.headers.SetValue("")
	h.run(r.focusOn(reqFieldMethod))
	h.send(tea.KeyPressMsg{Code: tea.KeyLeft}) // OPTIONS
	h.send(tea.KeyPressMsg{Code: tea.KeyLeft}) // HEAD
	h.press("ctrl+s")
	h.mustShow("200 OK")
	h.press("ctrl+y")
	if got, want := h.native[len(h.native)-1], "shipkey curl --key 'prod eu' --audience billing -- -sS -I -H 'Accept: application/json' '"+rig.srv.URL+"/v1/it'\\''s'"; got != want {
		t.Fatalf("copied\n%s\nwant\n%s", got, want)
	}
	// Fields that cannot be sent are not copied.
	n := len(h.native)
	h.press("esc")
	h.setURL("ftp://x")
	h.press("ctrl+y")
	if len(h.native) != n || r.errs[reqFieldURL] == "" {
		t.Fatalf("copied %d, URL error %q", len(h.native)-n, r.errs[reqFieldURL])
	}
}

// A damaged history file is moved aside and said once on the status
// line; the screen still sends, and keeps a new history.
func TestRequestHistoryDamagedFile(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	dir := t.TempDir()
	path := filepath.Join(dir, store.RequestsFile)
	if err := os.WriteFile(path, []byte("{\"version\":1,\"keys\":{\"demo\":{\"history\":[{\"url\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := historyHarness(t, rig, path)
	h.send(windowSize(80, 24))
	h.press("4")
	h.mustShow("Request history: request history damaged:", "moved aside to", "the history starts again")
	matches, _ := filepath.Glob(path + ".damaged-*")
	if len(matches) != 1 {
		t.Fatalf("moved aside: %q", matches)
	}
	h.sendRequest("GET", "/v1/after", "", "")
	h.run(h.m.request.focusOn(reqFieldURL))
	h.press("up")
	if got := h.fields(); got != "GET /v1/after [] " {
		t.Fatalf("recalled %q", got)
	}
}

// Text from the history file is shown inert: control characters in a URL,
// a header or a name never reach the terminal, in the fields or the list.
func TestRequestHistoryHostileFile(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	path := filepath.Join(t.TempDir(), store.RequestsFile)
	hostile := `{"version":1,"keys":{"demo":{"history":[{"method":"GET","url":"/x\u001b[2J\u001b]52;c;ZXZpbA==\u0007","headers":["X-A: b\u009b31m"],"body":"{\"a\":\"\u001b[H\"}","at":"2026-11-21T11:00:00Z"}],"saved":[{"name":"evil\u001b[31m","method":"GET\u001b[2J","url":"/y","at":"2026-11-21T11:00:00Z"}]}}}`
	if err := os.WriteFile(path, []byte(hostile), 0o600); err != nil {
		t.Fatal(err)
	}
	h := historyHarness(t, rig, path)
	h.send(windowSize(80, 24))
	h.press("4")
	inert := func() {
		t.Helper()
		for _, c := range h.view() {
			if (c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c < 0xa0) {
				t.Fatalf("the view holds %U:\n%q", c, h.view())
			}
		}
	}
	h.press("ctrl+r")
	h.mustShow(`evil\x1b[31m · GET /y`, `/x\x1b[2J`)
	inert()
	h.press("ctrl+y") // the saved one: its method is not one the screen sends
	if got := h.native[len(h.native)-1]; strings.ContainsRune(got, 0x1b) || strings.Contains(got, "2J") {
		t.Fatalf("copied %q", got)
	}
	h.press("esc")
	h.run(h.m.request.focusOn(reqFieldURL))
	h.press("up")
	inert()
	if strings.ContainsRune(h.fields(), 0x1b) {
		t.Fatalf("the fields hold ESC: %q", h.fields())
	}
}
