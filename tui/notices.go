package tui

import (
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
)

// Notices carries the warnings that layers below write (the store's
// "secrets are stored unencrypted", a failed cleanup) to the screen while the
// app runs: the terminal belongs to the app then, and a line written to
// stderr would tear its frame. It is an io.Writer: give it to the store as
// its Warn writer and to Options.Notices. Lines written before the app starts
// are kept and shown once it does.
type Notices struct {
	mu      sync.Mutex
	send    func(tea.Msg)
	pending []text.Clean
}

// noticeMsg is one warning line for the status line.
type noticeMsg struct{ text text.Clean }

// Write takes whole or partial lines; each non-empty line becomes a notice.
func (n *Notices) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "shipkey:"))
		if line == "" {
			continue
		}
		if n.send != nil {
			n.send(noticeMsg{text: text.Sanitize(line)})
		} else {
			n.pending = append(n.pending, text.Sanitize(line))
		}
	}
	return len(p), nil
}

// attach starts delivering notices to the running program, pending ones
// first. send must not block for long (tea.Program.Send does not once the
// program runs).
func (n *Notices) attach(send func(tea.Msg)) {
	n.mu.Lock()
	pending := n.pending
	n.pending, n.send = nil, send
	n.mu.Unlock()
	for _, t := range pending {
		send(noticeMsg{text: t})
	}
}

// detach stops delivery; later lines are kept as pending.
func (n *Notices) detach() {
	n.mu.Lock()
	n.send = nil
	n.mu.Unlock()
}
