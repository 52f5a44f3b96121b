package tui

import (
	"maps"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// storeWrites runs the app's writes to the store's files (the Request
// history) as commands, and lets Run finish, after the program ended, those
// it quit before running or while they ran: q pressed right after an
// answer must not lose the request that brought it. Each write runs once.
type storeWrites struct {
	mu      sync.Mutex
	pending map[*sync.Once]func()
}

// cmd is write as a command, tracked until it has run.
func (w *storeWrites) cmd(write func() tea.Msg) tea.Cmd {
	once := new(sync.Once)
	var msg tea.Msg
	do := func() { msg = write() }
	w.mu.Lock()
	if w.pending == nil {
		w.pending = map[*sync.Once]func(){}
	}
	w.pending[once] = do
	w.mu.Unlock()
	return func() tea.Msg {
		once.Do(do)
		w.mu.Lock()
		delete(w.pending, once)
		w.mu.Unlock()
		return msg
	}
}

// finish runs the writes not run yet and waits for those running.
func (w *storeWrites) finish() {
	w.mu.Lock()
	left := maps.Clone(w.pending)
	w.mu.Unlock()
	for once, do := range left {
		once.Do(do)
	}
}
