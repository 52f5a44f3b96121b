package tui

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// fakeTmux is a tmux server's paste buffers, as load-buffer, delete-buffer
// and show-options see them.
type fakeTmux struct {
	bufs      map[string]string
	clipboard string // set-clipboard
	terminal  string // what -w sent to the outer terminal
	fail      error
}

func (f *fakeTmux) run(stdin string, args ...string) (string, error) {
	if f.fail != nil {
		return "", f.fail
	}
	switch args[0] {
	case "load-buffer":
		f.bufs[args[len(args)-2]] = stdin
		if args[1] == "-w" && f.clipboard != "off" {
			f.terminal = stdin
		}
	case "delete-buffer":
		if _, ok := f.bufs[args[2]]; !ok {
			return "unknown buffer", errors.New("exit status 1")
		}
		delete(f.bufs, args[2])
	case "show-options":
		return f.clipboard + "\n", nil
	}
	return "", nil
}

func inTmux(h *harness, f *fakeTmux) {
	f.bufs = map[string]string{}
	h.m.cfg.tmux = f.run
}

// Inside tmux with its default set-clipboard (external), c and C go to
// named tmux buffers (and, through -w, the terminal), not by OSC 52, which
// tmux would ignore; the clear deletes both buffers.
func TestCopyInTmuxGoesToNamedBuffers(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	tm := &fakeTmux{clipboard: "external"} // tmux's default
	inTmux(h, tm)
	tok := h.m.details.tokens.AccessToken
	h.press("c")
	if tm.bufs[tmuxBufToken] != tok || tm.terminal != tok {
		t.Fatalf("tmux buffers after c: %d, terminal got the token: %v", len(tm.bufs), tm.terminal == tok)
	}
	if len(h.clipboard) != 0 {
		t.Fatal("an OSC 52 went out inside tmux (tmux ignores it by default)")
	}
	h.mustShow("Copied the access token to the tmux buffer, terminal clipboard and system clipboard;")
	h.press("C")
	if tm.bufs[tmuxBufHeader] != "Authorization: Bearer "+tok {
		t.Fatal("C did not put the header in its tmux buffer")
	}
	fire[clipClearMsg](h)
	for name, b := range tm.bufs {
		if strings.Contains(b, tok) {
			t.Fatalf("tmux buffer %s still holds the token after the clear", name)
		}
	}
	if len(tm.bufs) != 0 {
		t.Fatalf("shipkey left buffers behind: %v", len(tm.bufs))
	}
	if tm.terminal != clipCleared {
		t.Fatal("the terminal clipboard was not overwritten")
	}
	h.mustShow("Cleared the clipboard")
}

// With set-clipboard off, tmux keeps the text to itself: the toast says so.
func TestCopyInTmuxWithClipboardOff(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.m.cfg.clipWrite = nil
	inTmux(h, &fakeTmux{clipboard: "off"})
	h.press("c")
	h.mustShow("Copied the access token to the tmux buffer; clears in 30s.")
	h.mustNotShow("terminal clipboard")
}

// When nothing takes the text the toast never says "Copied", and no clear
// is scheduled.
func TestCopyNowhereSaysSo(t *testing.T) {
	t.Parallel()
	h := openDemoDetails(t, nil)
	h.m.cfg.clipWrite = nil
	inTmux(h, &fakeTmux{fail: errors.New("no server running")})
	h.press("c")
	h.mustShow("Could not copy the access token: tmux load-buffer: no server running.")
	h.mustNotShow("Copied")
	if n := fire[clipClearMsg](h); n != 0 {
		t.Fatalf("%d clear timers after a copy that went nowhere", n)
	}
}

func TestJoinAnd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a": "a", "a|b": "a and b", "a|b|c": "a, b and c"} {
		if got := joinAnd(strings.Split(in, "|")); got != want {
			t.Errorf("joinAnd(%q) = %q, want %q", in, got, want)
		}
	}
}

// Over SSH from a local tmux ($TMUX unset here, TERM naming tmux or
// screen), OSC 52 reaches the outer tmux, which keeps the copy as a paste
// buffer the clear cannot delete: both toasts name that buffer stack.
func TestCopyUnderAnOuterTmuxNamesItsBuffers(t *testing.T) {
	t.Parallel()
	for term, want := range map[string]string{"tmux-256color": "tmux", "screen.xterm-256color": "tmux or screen", "xterm-256color": ""} {
		if got := outerMultiplexer("", term); got != want {
			t.Errorf("TERM=%s: %q, want %q", term, got, want)
		}
		if got := outerMultiplexer("/tmp/tmux-0/default,1,0", term); got != "" {
			t.Errorf("TERM=%s inside a reachable tmux: %q", term, got)
		}
	}
	h := openDemoDetails(t, nil)
	h.m.cfg.clipWrite = nil
	h.m.cfg.outerMux = "tmux"
	h.send(tea.WindowSizeMsg{Width: 250, Height: 30}) // the whole toast in sight
	h.press("c")
	h.mustShow("Copied the access token to the terminal clipboard (OSC 52); clears in 30s; your outer tmux also keeps it in its paste buffers, which the clear cannot reach (tmux: delete-buffer there).")
	fire[clipClearMsg](h)
	h.mustShow("Cleared the clipboard; your outer tmux's paste buffers still hold the copy (tmux: list-buffers, delete-buffer there).")
}
