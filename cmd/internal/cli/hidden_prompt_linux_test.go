package cli

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/shipkey/shipkey/internal/text"
	"golang.org/x/sys/unix"
)

// promptWatch is the hidden prompt's output: at the prompt's first byte it
// notes whether the terminal still echoes, then types the answer, as a
// person (or a script) who answers as soon as the prompt shows.
type promptWatch struct {
	t       *testing.T
	tty     int      // the terminal whose modes the prompt's read sets
	typeIn  *os.File // where the answer is typed (the terminal's other end)
	answer  string
	echoing chan bool
}

func (w *promptWatch) Write(p []byte) (int, error) {
	if w.echoing != nil && len(p) > 0 {
		tio, err := unix.IoctlGetTermios(w.tty, unix.TCGETS)
		if err != nil {
			w.t.Error(err)
		}
		w.echoing <- err != nil || tio.Lflag&unix.ECHO != 0
		w.echoing = nil
		if _, err := io.WriteString(w.typeIn, w.answer); err != nil {
			w.t.Error(err)
		}
	}
	return len(p), nil
}

// TestHiddenPromptEchoesNothingOnceShown: by the time a hidden prompt (a
// passphrase's) is on the terminal, the terminal echoes nothing, so what
// is typed at once after it is never shown. Printed before the terminal
// was switched, a passphrase typed as soon as the prompt showed was
// echoed in the window between (the session tests' pty answers met it
// on a loaded machine).
func TestHiddenPromptEchoesNothingOnceShown(t *testing.T) {
	t.Parallel()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	// What the terminal shows (an echo would be there).
	shown := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(master)
		shown <- string(b)
	}()
	w := &promptWatch{t: t, tty: int(tty.Fd()), typeIn: master, answer: "hunter2\r", echoing: make(chan bool, 1)}
	echoing := w.echoing
	got, err := readHidden(tty, w, text.Trusted("Passphrase: "))
	if err != nil || got != "hunter2" {
		t.Fatalf("readHidden = %q, %v; want the typed answer", got, err)
	}
	if <-echoing {
		t.Error("the terminal still echoed when the prompt was shown")
	}
	tty.Close()
	select {
	case out := <-shown:
		if strings.Contains(out, "hunter2") {
			t.Errorf("the answer was echoed: %q", out)
		}
	case <-time.After(patience(5 * time.Second)):
		t.Error("the terminal's output never ended")
	}
}
