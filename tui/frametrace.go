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

// frameTrace is the terminal (stdout, still a term.File, so Bubble Tea sees a
// TTY) that notes when the first frame went out: the write that sets the
// window title, which Bubble Tea's renderer writes once, within the first
// frame's single write.
type frameTrace struct {
	*os.File
	path string
	done atomic.Bool
}

var firstFrameMark = []byte(ansi.SetWindowTitle(windowTitle))

func (f *frameTrace) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if !f.done.Load() && bytes.Contains(p, firstFrameMark) {
		f.done.Store(true)
		at := time.Now().UnixNano()
		if out, oerr := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); oerr == nil {
			_, _ = out.WriteString(strconv.FormatInt(at, 10) + "\n")
			_ = out.Close()
		}
	}
	return n, err
}
