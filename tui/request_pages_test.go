package tui

import (
	"testing"
)

// An answer with a next page (Link: rel="next") on the request's own
// origin: ctrl+n sends the request again for it, with the key's token,
// page after page until the last (which offers none); the URL field holds
// the page asked for. A next page on another origin is said and never
// asked for: the key's token goes nowhere else.
func TestRequestNextPage(t *testing.T) {
	t.Parallel()
	rig := newAPIRig(t)
	h := requestHarness(t, rig)
	h.send(windowSize(80, 24))
	h.press("4")
	h.setURL(rig.srv.URL + "/pages")
	h.async()
	send := func(key string) {
		h.t.Helper()
		h.press(key)
		h.pump("the answer", func() bool { return h.m.request.state == requestViewing })
	}
	send("ctrl+s")
	h.mustShow(`"page": 1`, `Link: </pages?page=2>; rel="next"`, "ctrl+n asks for the next page")
	for page := 2; page <= 3; page++ {
		send("ctrl+n")
		want := rig.srv.URL + "/pages?page=" + string(rune('0'+page))
		if got := h.m.request.url.Value(); got != want {
			t.Fatalf("page %d: the URL field holds %q, want %q", page, got, want)
		}
		h.mustShow(`"page": ` + string(rune('0'+page)))
	}
	h.mustNotShow("ctrl+n")
	before := rig.requests.Load()
	h.press("ctrl+n") // the last page: nothing to ask for
	if h.m.request.state != requestViewing || rig.requests.Load() != before {
		t.Fatalf("ctrl+n on the last page: state %v, %d more requests", h.m.request.state, rig.requests.Load()-before)
	}

	h.press("esc")
	h.setURL(rig.srv.URL + "/pages?away")
	send("ctrl+s")
	h.mustShow("the next page is on http://203.0.113.9, not where this request went")
	h.mustNotShow("ctrl+n")
	before = rig.requests.Load()
	h.press("ctrl+n")
	if h.m.request.state != requestViewing || rig.requests.Load() != before {
		t.Fatalf("ctrl+n with a next page elsewhere: state %v, %d more requests", h.m.request.state, rig.requests.Load()-before)
	}
}
