package tui

import (
	"path/filepath"
	"slices"

	tea "charm.land/bubbletea/v2"
	"github.com/fsnotify/fsnotify"
)

// storeChangedMsg says a file the store's stamp follows changed.
type storeChangedMsg struct{}

// storeWatch is an inotify watch (fsnotify) of the directories of the
// store's stamp files: instead of polling the stamp every second, the app
// checks it when one of those files changes, and sleeps otherwise.
type storeWatch struct {
	w       *fsnotify.Watcher
	changes chan struct{} // one value pending at most: changes coalesce
	done    chan struct{}
}

// watchStore watches files (absolute paths) through their directories;
// nil, err when a directory cannot be watched (it does not exist yet, no
// inotify): the app then polls.
func watchStore(files []string) (*storeWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, f := range files {
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	sw := &storeWatch{w: w, changes: make(chan struct{}, 1), done: make(chan struct{})}
	go sw.run(files)
	return sw, nil
}

func (sw *storeWatch) run(files []string) {
	defer close(sw.done)
	for {
		select {
		case ev, ok := <-sw.w.Events:
			if !ok {
				return
			}
			if !slices.Contains(files, filepath.Clean(ev.Name)) || ev.Op == fsnotify.Chmod {
				continue
			}
			select {
			case sw.changes <- struct{}{}:
			default: // a change is pending already
			}
		case _, ok := <-sw.w.Errors:
			if !ok {
				return
			}
			// An overflowed queue: say something may have changed.
			select {
			case sw.changes <- struct{}{}:
			default:
			}
		}
	}
}

// Close ends the watch.
func (sw *storeWatch) Close() {
	_ = sw.w.Close()
	<-sw.done
}

// listenChanges waits for the next change of the store's files.
func (m *Model) listenChanges() tea.Cmd {
	ch := m.cfg.changes
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		if _, ok := <-ch; !ok {
			return nil
		}
		return storeChangedMsg{}
	}
}

// handleStoreChanged checks the stamp (handleStamp reloads what changed)
// and listens on. While a key list is being read, the check waits for it
// (recheckAfterLoad): the change may have come after the list's stamp.
func (m *Model) handleStoreChanged() tea.Cmd {
	if m.req.pending(slotKeys) {
		m.recheck = true
		return m.listenChanges()
	}
	return tea.Batch(m.listenChanges(), m.checkStamp())
}

// recheckAfterLoad checks the stamp once a key list arrived if the store
// changed while it was read.
func (m *Model) recheckAfterLoad() tea.Cmd {
	if !m.recheck || m.req.pending(slotKeys) {
		return nil
	}
	m.recheck = false
	return m.checkStamp()
}
