package tui

import (
	"context"
	"testing"
	"time"
)

// c and C pressed on the token details before the key's tokens are read
// (the screen shows at once from the key list; the read follows) copy them
// when they come, instead of saying there is no token ("log in first").
func TestDetailsCopyBeforeTheTokensAreRead(t *testing.T) {
	t.Parallel()
	for _, k := range []struct{ key, prefix string }{{"c", ""}, {"C", "Authorization: Bearer "}} {
		t.Run(k.key, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
			h.async()
			h.press("1", k.key) // the read's answer is still in the inbox
			if h.m.details.errMsg != "" || len(h.native) != 0 {
				t.Fatalf("before the tokens: error %q, copies %q", h.m.details.errMsg, h.native)
			}
			h.pump("the queued copy", func() bool {
				h.nativeMu.Lock()
				defer h.nativeMu.Unlock()
				return len(h.native) > 0
			})
			tok := h.m.details.tokens.AccessToken
			if h.native[0] != k.prefix+tok || h.m.details.errMsg != "" {
				t.Fatalf("copied %q (error %q), want %q", h.native[0], h.m.details.errMsg, k.prefix+tok)
			}
		})
	}
}

// A key with no token: the copy asked for while reading says so once the
// read finds none.
func TestDetailsCopyBeforeTheReadOfAKeyWithoutToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		f.add("gone", "gone", time.Time{})
		_, _ = f.Logout(context.Background(), "gone")
	})
	h.async()
	h.run(h.m.openDetails("gone"))
	h.press("c")
	h.pump("the read", func() bool { return !h.m.details.reading })
	if h.m.details.errMsg != "no token to copy: log in first (l)" || len(h.native) != 0 {
		t.Fatalf("error %q, copies %q", h.m.details.errMsg, h.native)
	}
}
