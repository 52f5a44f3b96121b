package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// A pasted token has no liveness row (the server is asked only with a
// key's client), but where that row would be, under its signature, one
// line says its key would tell: as `inspect --verify` without --key.
// A key's tokens have no such line. At 40 columns the line wraps whole.
func TestInspectorSaysAPastedTokensLivenessNeedsItsKey(t *testing.T) {
	t.Parallel()
	for _, w := range []int{100, 40} {
		h := newHarness(t, func(f *fakeStore) { f.add("demo", "demo", time.Time{}) })
		h.send(windowSize(w, 40))
		h.press("1", "i")
		h.mustNotShow("not asked")
		h.press("p", "ctrl+u")
		h.send(tea.PasteMsg{Content: h.st.tokens["demo"].AccessToken})
		h.press("enter")
		h.mustShow("Pasted token", "server", "not asked")
		v := strings.Join(strings.Fields(h.view()), " ")
		if !strings.Contains(v, "needs its key (s on its token details)") {
			t.Errorf("%d columns: the server row does not say the key would tell:\n%s", w, h.view())
		}
		if sig, srv := strings.Index(v, "signature"), strings.Index(v, "server"); sig < 0 || srv < sig {
			t.Errorf("%d columns: the server row is not under the signature:\n%s", w, h.view())
		}
		// An opaque pasted token: the same line.
		h.press("p", "ctrl+u")
		h.typeText("opaque-token-value-1234567890")
		h.press("enter")
		h.mustShow("not a JWT", "not asked")
	}
}
