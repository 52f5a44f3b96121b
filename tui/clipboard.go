package tui

import (
	"crypto/sha256"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// copyToken puts the key's access token (or the Authorization header) on the
// clipboard: OSC 52 through the terminal and the native clipboard when there
// is one. Copying counts as use (MarkUsed). When the settings say so, the
// clipboard is cleared later, but only if shipkey copied nothing else since
// and, for the native clipboard, only if it still holds what shipkey put there.
func (m *Model) copyToken(label string, ts *auth.TokenSet, header bool) tea.Cmd {
	if ts == nil || ts.AccessToken == "" {
		m.toast, m.toastOK = "Nothing to copy: log in first.", false
		return nil
	}
	if ts.Access().Expired(m.c.now) {
		m.toast, m.toastOK = "The access token has expired: refresh it first (r).", false
		return nil
	}
	payload, what := ts.AccessToken, "access token"
	if header {
		payload, what = "Authorization: "+ts.Header(), "Authorization header"
	}
	cmd := m.copyText(payload, fmt.Sprintf("%s of %q", what, text.Safe(label)))
	return tea.Batch(cmd, m.markUsedCmd(label))
}

// copyText puts payload on the clipboard, the one way every copy goes: OSC
// 52 through the terminal (it works over SSH and in tmux) and the native
// clipboard when there is one; when the settings say so, the clipboard is
// cleared later, but only if shipkey copied nothing else since and, for the
// native clipboard, only if it still holds what shipkey put there. what
// names it in the toast ("the device code").
func (m *Model) copyText(payload, what string) tea.Cmd {
	m.clipGen++
	cmds := []tea.Cmd{tea.SetClipboard(payload)}
	if w := m.cfg.clipWrite; w != nil {
		cmds = append(cmds, func() tea.Msg { _ = w(payload); return nil })
	}
	clear := m.settings.ClipboardClear
	note := "the clipboard is not cleared (clipboard_clear = 0)"
	if clear > 0 {
		gen := m.clipGen
		cmds = append(cmds, m.cfg.after(clear, func(time.Time) tea.Msg { return clipClearMsg{gen: gen} }))
		note = fmt.Sprintf("shipkey clears the clipboard in %s", clear.Round(time.Second))
	}
	m.toast, m.toastOK = fmt.Sprintf("Copied the %s; %s.", what, note), true
	sum := sha256.Sum256([]byte(payload))
	m.clipSum = sum
	return tea.Batch(cmds...)
}

// clipCleared is what the clear writes by OSC 52: a single space. An empty
// OSC 52 is not a clear everywhere: tmux ignores it (the token stays in its
// paste buffer, and in the outer terminal's clipboard), while xterm, kitty,
// WezTerm and iTerm2 treat it differently from each other. Every one of
// them replaces the clipboard with a non-empty value, and a space pasted by
// mistake does nothing.
const clipCleared = " "

// handleClipClear overwrites the clipboard if what shipkey copied is still
// the latest thing it copied; the native clipboard only if it still holds
// it. The toast says what was done, and what shipkey cannot reach.
func (m *Model) handleClipClear(msg clipClearMsg) tea.Cmd {
	if msg.gen != m.clipGen {
		return nil
	}
	sum := m.clipSum
	m.clipSum = [32]byte{}
	m.toast, m.toastOK = "Cleared the clipboard (a clipboard manager or history may keep its own copy).", true
	cmds := []tea.Cmd{tea.SetClipboard(clipCleared)}
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
