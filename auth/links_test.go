package auth

import (
	"net/http"
	"testing"
)

// The first link with relation "next" in the Link headers (RFC 8288 §3):
// relations are case-insensitive, may be one of several, and a comma or
// semicolon inside a quoted parameter does not end a link.
func TestNextLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ header, want string }{
		{`<https://a/x?page=2>; rel="next", <https://a/x?page=9>; rel="last"`, "https://a/x?page=2"},
		{`<https://a/x?page=9>; rel="last", <https://a/x?page=2>; rel=next`, "https://a/x?page=2"},
		{`<https://a/1>; title="a, b; c"; rel="prev", <https://a/3>; REL="start Next"`, "https://a/3"},
		{`<https://a/1>; rel="prev"`, ""},
		{`garbage`, ""},
		{``, ""},
	} {
		h := http.Header{"Link": {tc.header}}
		if got := NextLink(h); got != tc.want {
			t.Errorf("Link: %s: %q, want %q", tc.header, got, tc.want)
		}
	}
}
