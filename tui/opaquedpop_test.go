package tui

import (
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// The inspector says that a DPoP key's opaque access token is DPoP-bound
// (it has no cnf claim to show); a bearer key's, or a pasted one, is not
// said to be.
func TestInspectorSaysOpaqueDPoPTokenIsBound(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		for _, dpop := range []bool{true, false} {
			h := newHarness(t, func(f *fakeStore) {
				k := f.add("demo", "demo", time.Time{})
				k.Connection.DPoP = dpop
				f.keys["demo"] = k
				ts := f.tokens["demo"]
				ts.AccessToken = "opaque-access-token-0123456789abcdef"
				if dpop {
					ts.TokenType = auth.DPoPTokenType
				}
			})
			h.send(windowSize(size[0], size[1]))
			h.press("1", "i")
			if h.m.active != screenInspector {
				t.Fatalf("i opened %v", h.m.active)
			}
			h.mustShow("Access token: opaque (not a JWT)")
			if dpop {
				h.mustShow("DPoP-bound")
			} else {
				h.mustNotShow("DPoP-bound")
			}
		}
	}
}
