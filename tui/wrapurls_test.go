package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
)

// scrolledViews is every view of the screen shown as j scrolls it from the
// top to the bottom (and a few presses past it).
func scrolledViews(h *harness, presses int) []string {
	var views []string
	for range presses {
		views = append(views, h.view())
		h.press("j")
	}
	return views
}

// cutURL returns a line of views that shows a piece of one of urls cut
// with "…" (the pane's "↑ more"/"↓ more" laid over it), or "".
func cutURL(views []string, urls ...string) string {
	for _, v := range views {
		for _, l := range strings.Split(v, "\n") {
			l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(l, " "), moreAbove), moreBelow))
			before, _, cut := strings.Cut(l, "…")
			if !cut {
				continue
			}
			f := strings.Fields(before)
			if len(f) == 0 || len(f[len(f)-1]) < 6 {
				continue
			}
			for _, u := range urls {
				if strings.Contains(u, f[len(f)-1]) {
					return l
				}
			}
		}
	}
	return ""
}

// brokenInWord returns a word of lines that holds part of u cut off inside
// a word of it (not before a "/", "?", "&" or "#"), or "".
func brokenInWord(lines []string, u string) string {
	for _, l := range lines {
		for _, w := range strings.Fields(ansi.Strip(l)) {
			if w == u || len(w) < 2 || !strings.Contains(u, w) {
				continue
			}
			ok := false
			for i := 0; i+len(w) <= len(u); i++ {
				if u[i:i+len(w)] != w {
					continue
				}
				end := i + len(w)
				if (i == 0 || strings.ContainsAny(w[:1], "/?&#")) && (end == len(u) || strings.ContainsAny(u[end:end+1], "/?&#")) {
					ok = true
				}
			}
			if !ok {
				return w
			}
		}
	}
	return ""
}

// Scrolling the sign-in screen never lays "↑ more" or "↓ more" over a line
// of a URL: its lines leave room for them, at 40×10 and at 80×24.
func TestSigninURLsWholeWhileScrolled(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {80, 24}} {
		for _, p := range []auth.Prompt{devicePrompt, browserPrompt} {
			h := deviceHarness(t, p, p.Grant, size[0], size[1])
			views := scrolledViews(h, 30)
			if l := cutURL(views, p.VerificationURI, p.VerificationURIComplete, p.AuthURL, p.RedirectURI); l != "" {
				t.Errorf("%s at %dx%d: a URL line is cut: %q\n%s", p.Grant, size[0], size[1], l, strings.Join(views, "\n"))
			}
		}
	}
}

// The issuer (the realm's URL) wraps between the pieces of its path on the
// token details and in the inspector's claims, never inside a word.
func TestIssuerWrapsBetweenPathPieces(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 10}, {80, 24}} {
		h := openDemoDetails(t, nil)
		h.send(windowSize(size[0], size[1]))
		iss := h.m.details.key.Connection.RealmURL()
		if w := brokenInWord(strings.Split(h.m.details.content(), "\n"), iss); w != "" {
			t.Errorf("details at %dx%d: the issuer %q is broken inside a word (%q):\n%s", size[0], size[1], iss, w, h.m.details.content())
		}
		h.press("i")
		if w := brokenInWord(strings.Split(h.m.inspector.vp.GetContent(), "\n"), iss); w != "" {
			t.Errorf("inspector at %dx%d: the issuer %q is broken inside a word (%q):\n%s", size[0], size[1], iss, w, h.m.inspector.vp.GetContent())
		}
		if l := cutURL(scrolledViews(h, 30), iss); l != "" {
			t.Errorf("inspector at %dx%d: the issuer is cut: %q", size[0], size[1], l)
		}
	}
}
