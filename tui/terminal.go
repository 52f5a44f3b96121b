package tui

import (
	"bytes"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// EnvTraceFirstFrame names a file to which the app appends, as one line of
// Unix nanoseconds, the wall-clock time at which its first frame was written
// to the terminal (for benchmarks: a launcher records when it exec'd
// shipkey; the difference is exec → first frame). Unset: nothing is traced.
const EnvTraceFirstFrame = "SHIPKEY_TRACE_FIRST_FRAME"

// terminal is stdout (still a term.File, so Bubble Tea sees a TTY) that
// knows when the first frame went out: the write that sets the window
// title, which Bubble Tea's renderer writes once, within the first frame's
// single write. It closes firstFrame then, and with a trace path set
// appends the time there. (A tea.ExecProcess child would get this writer
// as its stdout, a pipe rather than the terminal: give such a child
// os.Stdout itself.)
type terminal struct {
	*os.File
	trace      string
	firstFrame chan struct{}
	done       atomic.Bool // the first frame went out
}

func newTerminal(f *os.File, trace string) *terminal {
	return &terminal{File: f, trace: trace, firstFrame: make(chan struct{})}
}

var firstFrameMark = []byte(ansi.SetWindowTitle(windowTitle))

func (t *terminal) Write(p []byte) (int, error) {
	n, err := t.File.Write(p)
	if !t.done.Load() && bytes.Contains(p, firstFrameMark) && t.done.CompareAndSwap(false, true) {
		close(t.firstFrame)
		if t.trace != "" {
			at := time.Now().UnixNano()
			if out, oerr := os.OpenFile(t.trace, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); oerr == nil {
				_, _ = out.WriteString(strconv.FormatInt(at, 10) + "\n")
				_ = out.Close()
			}
		}
	}
	return n, err
}
