package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/shipkey/shipkey/auth"
)

func openKeyList(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", t0.Add(-3*time.Minute))
		f.add("ci-bot", "bot", time.Time{})
		f.add("staging", "stage", t0.Add(-2*time.Hour))
	})
	h.press("2")
	if h.m.active != screenKeys {
		t.Fatalf("active = %v", h.m.active)
	}
	// Opening the table selects the key just viewed (the default here).
	if sel := h.m.keyList.selected(); sel == nil || sel.Label() != "demo" {
		t.Fatalf("selected %v, want demo", sel)
	}
	h.press("g")
	return h
}

// filterTo types the filter q and checks that the cursor is then on label.
func filterTo(h *harness, q, label string) {
	h.t.Helper()
	h.press("/")
	h.typeText(q)
	h.press("enter")
	if sel := h.m.keyList.selected(); sel == nil || sel.Label() != label {
		h.t.Fatalf("selected %v after filtering %q, want %s", sel, q, label)
	}
}

func visibleLabels(h *harness) []string {
	var out []string
	for _, i := range h.m.keyList.visible {
		out = append(out, h.m.keyList.keys.row(i).Label())
	}
	return out
}

func TestKeyListColumnsAndRows(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.mustShow("API Key", "Label", "Last Used", "Access expires", "* demo", "3 min ago", notHandedOut, "2 h ago", "in 5:00")
	golden.RequireEqual(t, []byte(h.view()))
}

func TestKeyListCountdownColumnTicks(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.clock.Advance(61 * time.Second)
	fire[tickMsg](h)
	h.mustShow("in 3:59", "4 min ago")
}

func TestKeyListSort(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	if got := strings.Join(visibleLabels(h), ","); got != "ci-bot,demo,staging" {
		t.Fatalf("by label: %s", got)
	}
	h.press("o")
	if got := strings.Join(visibleLabels(h), ","); got != "demo,staging,ci-bot" {
		t.Fatalf("by last used: %s", got)
	}
	h.mustShow("sorted by last used")
}

func TestKeyListFilterAsYouType(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.press("/")
	if !h.m.keyList.Capturing() {
		t.Fatal("/ did not focus the filter")
	}
	h.typeText("st")
	if got := strings.Join(visibleLabels(h), ","); got != "staging" {
		t.Fatalf("substring filter: %s", got)
	}
	h.press("backspace", "backspace")
	h.typeText("cbt") // fuzzy: c…b…t
	if got := strings.Join(visibleLabels(h), ","); got != "ci-bot" {
		t.Fatalf("fuzzy filter: %s", got)
	}
	// Keys are text while the filter has focus: q does not quit, 2 does not navigate.
	h.press("q", "2")
	if h.m.quitting || h.m.active != screenKeys {
		t.Fatal("a printable key acted while the filter had focus")
	}
	h.press("backspace", "backspace", "enter")
	if h.m.keyList.Capturing() || h.m.keyList.filter.Value() != "cbt" {
		t.Fatal("enter must keep the filter and leave the field")
	}
	h.press("enter")
	if h.m.active != screenDetails || h.m.details.key.Label != "ci-bot" {
		t.Fatalf("enter opened %v %q", h.m.active, h.m.details.key.Label)
	}
	h.press("esc")
	h.press("esc") // clears the filter
	if len(h.m.keyList.visible) != 3 {
		t.Fatal("esc did not clear the filter")
	}
}

func TestKeyListDeleteNeedsConfirmation(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.press("d")
	h.mustShow(`Delete key "ci-bot" and its secrets? (y/n)`)
	golden.RequireEqual(t, []byte(h.view()))
	h.press("n")
	if contains(h.st.Calls(), "remove ci-bot") || h.m.keyList.mode != listBrowsing {
		t.Fatal("n must cancel")
	}
	h.press("d", "q") // modal: q neither quits nor deletes
	if h.m.quitting || contains(h.st.Calls(), "remove ci-bot") {
		t.Fatal("q acted in the confirmation")
	}
	h.press("y")
	if !contains(h.st.Calls(), "remove ci-bot") {
		t.Fatalf("y did not delete: %v", h.st.Calls())
	}
	if got := strings.Join(visibleLabels(h), ","); got != "demo,staging" {
		t.Fatalf("after delete: %s", got)
	}
}

func TestKeyListRenameInline(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.press("e")
	if !h.m.keyList.Capturing() {
		t.Fatal("e did not open the rename field")
	}
	h.press("ctrl+u")
	h.typeText("demo")
	h.press("enter")
	h.mustShow("exists")
	h.press("ctrl+u")
	h.typeText("robot")
	h.press("enter")
	if !contains(h.st.Calls(), "rename ci-bot robot") {
		t.Fatalf("no rename: %v", h.st.Calls())
	}
	if got := strings.Join(visibleLabels(h), ","); got != "demo,robot,staging" {
		t.Fatalf("after rename: %s", got)
	}
}

func TestKeyListSetDefaultAndCopy(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.press("j", "j", "*") // staging
	if !contains(h.st.Calls(), "default staging") {
		t.Fatalf("* did not set the default: %v", h.st.Calls())
	}
	h.mustShow("* staging")
	if h.m.current != "staging" {
		t.Fatalf("current = %q", h.m.current)
	}
	h.press("c")
	if len(h.clipboard) != 1 || h.clipboard[0] != h.st.tokens["staging"].AccessToken {
		t.Fatal("c in the list did not copy the selected key's token")
	}
	if !contains(h.st.Calls(), "markused staging") {
		t.Fatal("copy did not mark the key used")
	}
	h.mustShow("just now")
}

func TestKeyListMouseWheel(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown})
	if h.m.keyList.cursor != 1 {
		t.Fatalf("wheel down: cursor %d", h.m.keyList.cursor)
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if h.m.keyList.cursor != 0 {
		t.Fatalf("wheel up: cursor %d", h.m.keyList.cursor)
	}
}

func TestKeyListHostileLabel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) { f.add("evil\x1b]52;c;aGk=\x07\x1b[2J", "x", time.Time{}) })
	h.send(windowSize(130, 30)) // room for the whole escaped label beside every column
	h.press("2")
	if v := h.view(); strings.Contains(v, "\x1b") || strings.Contains(v, "\x07") {
		t.Fatalf("a control character reached the view: %q", v)
	}
	h.mustShow(`evil\x1b]52;c;aGk=\x07\x1b[2J`)
}

// Clearing a filter or changing the sort keeps the cursor on the key the
// user found, so the next action (rename, delete) hits that key.
func TestKeyListCursorFollowsTheKey(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	filterTo(h, "stag", "staging")
	h.press("esc") // clears the filter: every key is back
	if got := visibleLabels(h); len(got) != 3 {
		t.Fatalf("visible = %v", got)
	}
	if sel := h.m.keyList.selected(); sel == nil || sel.Label() != "staging" {
		t.Fatalf("selected %v after clearing the filter, want staging", sel)
	}
	h.press("o") // sort by last used
	if sel := h.m.keyList.selected(); sel == nil || sel.Label() != "staging" {
		t.Fatalf("selected %v after sorting, want staging", sel)
	}
	h.press("e")
	if h.m.keyList.target != "staging" {
		t.Fatalf("rename targets %q, want staging", h.m.keyList.target)
	}
}

// Every key appears once in the full help, and one key is "1 key".
func TestHelpListsEachKeyOnceAndCountsGrammatically(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	seen := map[string]int{}
	for _, g := range h.m.FullHelp() {
		for _, b := range g {
			seen[b.Help().Key]++
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%q listed %d times in the full help", k, n)
		}
	}
	h.press("2")
	h.mustShow("1 of 1 key ·")
}

// A team key's delete asks for the whole team: it goes for every member.
func TestKeyListDeleteTeamKeySaysTheTeam(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", time.Time{})
		k := f.add("ops/deploy", "svc", time.Time{})
		k.Team = "ops"
		f.keys[k.Label] = k
	})
	h.press("2", "G", "d")
	h.mustShow(`Delete team key "ops/deploy" for every member of ops? (y/n)`)
	h.press("n", "g", "d")
	h.mustShow(`Delete key "demo" and its secrets? (y/n)`)
}

// The filter finds what the table shows, not only labels: the masked API
// key and the Grant column; when nothing matches, a line says so and how to
// clear it.
func TestKeyListFilterMatchesWhatTheTableShows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("demo", "demo", t0.Add(-3*time.Minute))
		k := f.add("ci-bot", "bot", time.Time{})
		k.Grant = auth.GrantClientCredentials
		f.keys["ci-bot"] = k
		s := f.add("staging", "stage", t0.Add(-2*time.Hour))
		s.Masked = "eyJhbG…Q7wXzK" // the API Key column's text
		f.keys["staging"] = s
	})
	h.press("2")
	tail := "q7wXz"
	h.press("/")
	h.typeText(tail)
	if got := strings.Join(visibleLabels(h), ","); got != "staging" {
		t.Fatalf("filter %q (staging's API key): %s", tail, got)
	}
	h.press("esc", "/")
	h.typeText("client")
	if got := strings.Join(visibleLabels(h), ","); got != "ci-bot" {
		t.Fatalf("filter client (the Grant column): %s", got)
	}
	h.press("esc", "/")
	h.typeText("zzzq")
	if len(h.m.keyList.visible) != 0 {
		t.Fatalf("zzzq matched %v", visibleLabels(h))
	}
	h.mustShow(`No key matches "zzzq" (label, API key or grant) · esc clears the filter`)
}

// On a wide screen the Label column stops at 40 cells: the spare width stays
// at the right instead of pushing the dates away from their labels.
func TestKeyListLabelColumnStopsOnAWideScreen(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	h.send(tea.WindowSizeMsg{Width: 200, Height: 30})
	for i, c := range h.m.keyList.cols {
		if c == ColLabel && h.m.keyList.widths[i] > 40 {
			t.Errorf("at 200 columns the Label column is %d cells wide", h.m.keyList.widths[i])
		}
	}
	line := ""
	for l := range strings.SplitSeq(h.view(), "\n") {
		if strings.Contains(l, "staging") {
			line = l
		}
	}
	if i, j := strings.Index(line, "staging"), strings.Index(line, "2 h ago"); i < 0 || j < 0 || j-i > 60 {
		t.Errorf("the label and its Last Used are far apart:\n%s", line)
	}
}

// A delete says what the server did with the key's session, as `keys rm`
// does: ended it (and how), had ended it already, or offers no way to.
func TestKeyListDeleteSaysWhatTheServerDid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		end  auth.EndResult
		want string
	}{
		{auth.EndResult{Via: "revocation"}, `Deleted "ci-bot" and ended its session at the server (revocation).`},
		{auth.EndResult{Via: "logout", AlreadyEnded: true}, `Deleted "ci-bot"; the server said its session had already ended.`},
		{auth.EndResult{}, `Deleted "ci-bot"; the server offers no way to end its session: its tokens stay valid until they expire.`},
	} {
		h := openKeyList(t)
		h.st.mu.Lock()
		h.st.removeEnd = tc.end
		h.st.mu.Unlock()
		h.send(tea.WindowSizeMsg{Width: 200, Height: 30})
		h.press("d", "y")
		h.mustShow(tc.want)
	}
}

// Sort by any column; the same column again reverses; labels compare
// without case; g/G go to the ends.
func TestKeyListSortByAnyColumn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		f.add("beta", "u", t0.Add(-time.Hour))
		f.add("Alpha", "u", t0.Add(-time.Minute))
		f.add("gamma", "u", time.Time{})
		k := f.keys["gamma"]
		k.Token.AccessExpiresAt = t0.Add(time.Minute)
		k.Token.JWTExpiresAt = time.Time{}
		f.keys["gamma"] = k
	})
	h.press("2")
	if got := sortedLabels(h); got != "Alpha,beta,gamma" {
		t.Fatalf("by label (case-insensitive): %s", got)
	}
	h.press("L")
	if got := sortedLabels(h); got != "gamma,beta,Alpha" {
		t.Fatalf("label again reverses: %s", got)
	}
	h.press("U")
	if got := sortedLabels(h); got != "Alpha,beta,gamma" {
		t.Fatalf("by last used, most recent first, never last: %s", got)
	}
	h.press("U")
	if got := sortedLabels(h); got != "gamma,beta,Alpha" {
		t.Fatalf("last used reversed: %s", got)
	}
	h.press("A")
	if got := sortedLabels(h); !strings.HasPrefix(got, "gamma,") {
		t.Fatalf("by access expiry, soonest first: %s", got)
	}
	h.mustShow("sorted by access expires ▲", "Access expires ▲")
	h.press("A")
	h.mustShow("Access expires ▼")
	h.press("K", "R")
	h.press("G")
	if h.m.keyList.cursor != 2 {
		t.Fatalf("G: cursor %d", h.m.keyList.cursor)
	}
	h.press("g")
	if h.m.keyList.cursor != 0 {
		t.Fatalf("g: cursor %d", h.m.keyList.cursor)
	}
}

// Opening the table selects the key just viewed.
func TestKeyListSelectsTheKeyJustViewed(t *testing.T) {
	t.Parallel()
	h := harness80(t)
	h.press("2", "G", "enter")
	if h.m.details.key.Label != "shipping-prod" {
		t.Fatalf("opened %q", h.m.details.key.Label)
	}
	h.press("esc", "g", "1")
	h.press("2")
	if sel := h.m.keyList.selected(); sel == nil || sel.Label() != "shipping-prod" {
		t.Fatalf("selected %v, want the key just viewed", sel)
	}
}

// The filter narrows the last result when the query grows and starts over
// when it shrinks; matching ignores case.
func TestKeyListFilterIncremental(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(f *fakeStore) {
		for i := range 30 {
			f.add(fmt.Sprintf("Key-%02d", i), "u", time.Time{})
		}
	})
	h.press("2", "/")
	want := 0
	for i := range 30 {
		if matches(fmt.Sprintf("key-%02d", i), "key-1") {
			want++
		}
	}
	h.typeText("KEY-1")
	if n := len(h.m.keyList.visible); n != want || want == 30 {
		t.Fatalf("KEY-1: %d rows, want %d", n, want)
	}
	h.press("backspace")
	if n := len(h.m.keyList.visible); n != 30 {
		t.Fatalf("after backspace: %d rows", n)
	}
}
