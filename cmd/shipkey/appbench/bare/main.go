// Command bare is the floor under appbench's figures: a Bubble Tea program
// (the upstream version shipkey builds with) that renders one static line
// on the alternate screen and waits for q, doing nothing else. What it
// costs idle and how soon its first frame is out are the framework's own;
// the app is measured against them.
//
// With SHIPKEY_TRACE_FIRST_FRAME set it appends, as the app does, the
// wall-clock time (Unix nanoseconds) at which its first frame was written:
// the write that carries the window title.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

const title = "bare"

type model struct{}

func (model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && (k.String() == "q" || k.String() == "ctrl+c") {
		return m, tea.Quit
	}
	return m, nil
}

func (model) View() tea.View {
	v := tea.NewView("bare › one static line (q quits)")
	v.AltScreen = true
	v.WindowTitle = title
	return v
}

// traced is stdout that notes when the first frame went out.
type traced struct {
	*os.File
	path string
	done atomic.Bool
}

var mark = []byte(ansi.SetWindowTitle(title))

func (t *traced) Write(p []byte) (int, error) {
	n, err := t.File.Write(p)
	if t.path != "" && !t.done.Load() && bytes.Contains(p, mark) && t.done.CompareAndSwap(false, true) {
		at := time.Now().UnixNano()
		if f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			_, _ = f.WriteString(strconv.FormatInt(at, 10) + "\n")
			_ = f.Close()
		}
	}
	return n, err
}

func main() {
	out := &traced{File: os.Stdout, path: os.Getenv("SHIPKEY_TRACE_FIRST_FRAME")}
	if _, err := tea.NewProgram(model{}, tea.WithOutput(out)).Run(); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}
