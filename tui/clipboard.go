package tui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/audit"
)

// Where a copy can go, as the toast names it.
const (
	destTmux     = "tmux buffer"
	destTerminal = "terminal clipboard"
	destOSC52    = "terminal clipboard (OSC 52)"
)

// The tmux paste buffers shipkey writes, one per kind of payload, so the
// clear deletes exactly what shipkey made and nothing the user copied.
const (
	tmuxBufToken  = "shipkey-token"
	tmuxBufHeader = "shipkey-header"
	tmuxBufClear  = "shipkey-clear"
	tmuxBufSignin = "shipkey-signin" // a device code or a sign-in URL
)

// tmuxRunner runs a tmux command against the server shipkey runs in, with
// stdin as its input, and returns its output.
type tmuxRunner func(stdin string, args ...string) (string, error)

// execTmux is the tmux runner inside tmux ($TMUX set and the tmux binary
// reachable); nil elsewhere. Each run is bounded: a wedged tmux server must
// not hold the command forever.
func execTmux() tmuxRunner {
	if os.Getenv("TMUX") == "" {
		return nil
	}
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return nil
	}
	return func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
}

// outerMultiplexer names the terminal multiplexer TERM says shipkey's
// terminal is when it does not run inside a tmux it can reach ($TMUX
// unset): typically a local tmux or screen, with shipkey on the far side of
// SSH. "" otherwise.
func outerMultiplexer(tmuxEnv, term string) string {
	switch {
	case tmuxEnv != "":
		return ""
	case strings.HasPrefix(term, "tmux"):
		return "tmux"
	case strings.HasPrefix(term, "screen"):
		return "tmux or screen" // tmux's default TERM is screen too
	}
	return ""
}

// nativeClipboardName is what the toast calls the system clipboard.
func nativeClipboardName() string {
	switch {
	case runtime.GOOS == "darwin":
		return "macOS clipboard"
	case runtime.GOOS == "windows":
		return "Windows clipboard"
	case os.Getenv("WAYLAND_DISPLAY") != "":
		return "Wayland clipboard"
	default:
		return "X11 clipboard"
	}
}

// copyToken puts the key's access token (or the Authorization header) where
// the terminal can paste it. Inside tmux: a named tmux buffer through
// `tmux load-buffer -w`, which also reaches the outer terminal's clipboard
// when tmux's set-clipboard allows it (tmux's default, external, ignores an
// application's own OSC 52). Elsewhere: OSC 52. Both: the native clipboard
// when there is one. The writes run as a command; the toast, from its
// result, names where the text went and never says "Copied" when nothing
// took it. Copying counts as use (MarkUsed).
func (m *Model) copyToken(label string, ts *auth.TokenSet, header bool) tea.Cmd {
	if ts == nil || ts.AccessToken == "" {
		m.toast, m.toastOK = text.Trusted("Nothing to copy: log in first."), false
		return nil
	}
	if ts.Access().Expired(m.c.now) {
		m.toast, m.toastOK = text.Trusted("The access token has expired: refresh it first (r)."), false
		return nil
	}
	return m.recordHandOut(handOutRecordedMsg{label: label, what: audit.Copy, tokens: ts, header: header})
}

// copyTokenNow copies a token whose copy is recorded.
func (m *Model) copyTokenNow(label string, ts *auth.TokenSet, header bool) tea.Cmd {
	payload, what, buf := ts.AccessToken, "access token", tmuxBufToken
	if header {
		payload, what, buf = "Authorization: "+ts.Header(), "Authorization header", tmuxBufHeader
	}
	return tea.Batch(m.copyText(payload, what, buf), m.markUsedCmd(label))
}

// copyText is the one way every copy goes (a token, a device code, a
// sign-in URL): inside tmux into the named buffer buf through `tmux
// load-buffer -w`, elsewhere OSC 52, and the native clipboard when there is
// one. what names it in the toast, which comes from the writes' result
// (handleClipCopied, which also schedules the clear).
func (m *Model) copyText(payload, what, buf string) tea.Cmd {
	m.clipGen++
	gen := m.clipGen
	tmux, native, nativeName := m.cfg.tmux, m.cfg.clipWrite, m.cfg.clipName
	m.toast, m.toastOK = text.Cleanf("Copying the %s…", what), true
	write := func() tea.Msg {
		res := clipCopiedMsg{gen: gen, what: what, sum: sha256.Sum256([]byte(payload))}
		if tmux != nil {
			if _, err := tmux(payload, "load-buffer", "-w", "-b", buf, "-"); err != nil {
				res.failed = append(res.failed, "tmux load-buffer: "+err.Error())
			} else {
				res.dests = append(res.dests, destTmux)
				if mode, err := tmux("", "show-options", "-gv", "set-clipboard"); err == nil && strings.TrimSpace(mode) != "off" {
					res.dests = append(res.dests, destTerminal)
				}
			}
		}
		if native != nil {
			if err := native(payload); err != nil {
				res.failed = append(res.failed, nativeName+": "+err.Error())
			} else {
				res.dests = append(res.dests, nativeName)
			}
		}
		return res
	}
	cmds := []tea.Cmd{write}
	if tmux == nil {
		// OSC 52 goes out with the next frame; whether the terminal takes it
		// cannot be known, so the toast says it was sent by OSC 52.
		cmds = append(cmds, tea.SetClipboard(payload))
	}
	return tea.Batch(cmds...)
}

// handleClipCopied reports where a copy went and schedules the clear. A copy
// that reached nothing inside tmux falls back to OSC 52 and says so.
func (m *Model) handleClipCopied(msg clipCopiedMsg) tea.Cmd {
	if msg.gen != m.clipGen {
		return nil
	}
	dests := msg.dests
	if m.cfg.tmux == nil {
		dests = append([]string{destOSC52}, dests...)
	}
	kept := ""
	if mux := m.cfg.outerMux; mux != "" && m.cfg.tmux == nil {
		kept = "; your outer " + mux + " also keeps it in its paste buffers, which the clear cannot reach (tmux: delete-buffer there)"
	}
	if len(dests) == 0 {
		m.toast, m.toastOK = text.Cleanf("Could not copy the %s: %s.", msg.what, strings.Join(msg.failed, "; ")), false
		return nil
	}
	m.clipSum = msg.sum
	clear := m.settings.ClipboardClear
	note := "not cleared (clipboard_clear = 0)"
	var cmd tea.Cmd
	if clear > 0 {
		gen := m.clipGen
		cmd = m.cfg.after(clear, func(time.Time) tea.Msg { return clipClearMsg{gen: gen} })
		note = fmt.Sprintf("clears in %s", clear.Round(time.Second))
	}
	m.toast, m.toastOK = text.Cleanf("Copied the %s to the %s; %s%s.", msg.what, joinAnd(dests), note, kept), true
	return cmd
}

// joinAnd joins words as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// clipCleared is what the clear writes by OSC 52: a single space. An empty
// OSC 52 is not a clear everywhere: tmux ignores it, while xterm, kitty,
// WezTerm and iTerm2 treat it differently from each other. Every one of
// them replaces the clipboard with a non-empty value, and a space pasted by
// mistake does nothing.
const clipCleared = " "

// handleClipClear takes what shipkey copied away again, if it is still the
// latest thing shipkey copied: inside tmux it deletes shipkey's buffers
// (token and header) and overwrites the outer terminal's clipboard through
// a buffer it deletes at once; elsewhere it overwrites by OSC 52. The native
// clipboard is emptied only if it still holds what shipkey put there.
func (m *Model) handleClipClear(msg clipClearMsg) tea.Cmd {
	if msg.gen != m.clipGen {
		return nil
	}
	sum := m.clipSum
	m.clipSum = [32]byte{}
	m.toast, m.toastOK = text.Trusted("Cleared the clipboard (a clipboard manager or history may keep its own copy)."), true
	if mux := m.cfg.outerMux; mux != "" && m.cfg.tmux == nil {
		m.toast = text.Cleanf("Cleared the clipboard; your outer %s's paste buffers still hold the copy (tmux: list-buffers, delete-buffer there).", mux)
	}
	var cmds []tea.Cmd
	if tmux := m.cfg.tmux; tmux != nil {
		cmds = append(cmds, func() tea.Msg {
			_, _ = tmux(clipCleared, "load-buffer", "-w", "-b", tmuxBufClear, "-")
			for _, b := range []string{tmuxBufToken, tmuxBufHeader, tmuxBufSignin, tmuxBufClear} {
				_, _ = tmux("", "delete-buffer", "-b", b) // "unknown buffer" when never made
			}
			return nil
		})
	} else {
		cmds = append(cmds, tea.SetClipboard(clipCleared))
	}
	if w, r := m.cfg.clipWrite, m.cfg.clipRead; w != nil && r != nil {
		cmds = append(cmds, func() tea.Msg {
			if cur, err := r(); err == nil && sha256.Sum256([]byte(cur)) == sum {
				_ = w("")
			}
			return nil
		})
	}
	return tea.Batch(cmds...)
}
