package tui

import (
	"context"
	"errors"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// jwksVerifier is a Verifier that also checks against a fetched key set
// (KeySetVerifier): the realms do not know the foreign issuer, the key set
// at goodJWKS verifies, any other URL cannot be fetched.
type jwksVerifier struct {
	mu      sync.Mutex
	fetched []string
}

const goodJWKS = "https://sso.elsewhere.example/realms/shipping/protocol/openid-connect/certs"

func (v *jwksVerifier) Verify(context.Context, []auth.Connection, string) auth.Verification {
	return auth.Verification{State: auth.SigNotChecked, KeysUnavailable: true,
		Reason: text.Trusted("issuer https://sso.elsewhere.example/realms/shipping is not one of your connections; not fetching its keys")}
}

func (v *jwksVerifier) FetchKeySet(_ context.Context, url string) (auth.KeySet, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fetched = append(v.fetched, url)
	if url != goodJWKS {
		return auth.KeySet{}, errors.New("404 Not Found")
	}
	return auth.KeySet{}, nil
}

func (v *jwksVerifier) VerifyWithKeySet(string, auth.KeySet) auth.Verification {
	return auth.Verification{State: auth.SigVerified, KeyID: text.Trusted("foreign-1")}
}

// The inspector takes a JWKS URL (w), as `inspect --verify --jwks URL`
// does: a foreign issuer's pasted token is checked against the key set
// there; a URL that is not http(s) is refused in place; one that cannot be
// fetched says so; an empty one goes back to the realms' keys.
func TestInspectorVerifiesWithAJWKSURL(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {40, 10}} {
		v := &jwksVerifier{}
		h := newHarness(t, nil)
		h.m.cfg.verifier = v
		h.send(windowSize(size[0], size[1]))
		h.press("esc", "3")
		h.send(tea.PasteMsg{Content: longLivedToken()})
		h.press("enter")
		notVerified(h)
		if size[0] == 80 {
			h.mustShow("w: check with a JWKS URL", "w JWKS URL")
		}

		h.press("w")
		if !h.m.inspector.Capturing() {
			t.Fatal("w did not open the JWKS URL field")
		}
		h.typeText("ftp://x")
		h.press("enter")
		h.mustShow("✗ a JWKS URL")
		h.press("ctrl+u")
		h.typeText("https://sso.elsewhere.example/nope")
		h.press("enter")
		notVerified(h)
		if got := h.m.inspector.tokens[0].ver.Reason.String(); got != "the JWKS URL: 404 Not Found" {
			t.Errorf("a key set that cannot be fetched: %q", got)
		}

		h.press("w", "ctrl+u")
		h.typeText(goodJWKS)
		h.press("enter")
		if got := h.m.inspector.tokens[0].ver; got.State != auth.SigVerified || got.KeyID.String() != "foreign-1" {
			t.Errorf("after the JWKS URL: %+v", got)
		}
		if size[0] == 80 {
			h.mustShow("signature verified", "keys from https://sso.elsewhere.example")
		}
		v.mu.Lock()
		if len(v.fetched) != 2 || v.fetched[1] != goodJWKS {
			t.Errorf("fetched %q", v.fetched)
		}
		v.mu.Unlock()

		// Empty: the realms' keys again.
		h.press("w", "ctrl+u", "enter")
		notVerified(h)
		if h.m.inspector.jwks != "" {
			t.Errorf("jwks %q after an empty URL", h.m.inspector.jwks)
		}
	}
}

// notVerified fails unless the inspected token's signature was not checked
// (and says so where the screen is wide enough).
func notVerified(h *harness) {
	h.t.Helper()
	if got := h.m.inspector.tokens[0].ver.State; got != auth.SigNotChecked {
		h.t.Fatalf("signature state %v, want not checked", got)
	}
	if h.m.width >= 80 {
		h.mustShow("not verified")
	}
}
