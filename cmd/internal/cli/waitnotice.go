package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// waitNotice says on stderr, once a request to the server has taken a
// second, "waiting for the server… (Ns)", updated each second and erased
// when the answer arrives. Only when stderr is a terminal, and never while
// the app owns the screen (then Diag points elsewhere). It is the auth
// client's Options.Waiting.
type waitNotice struct {
	w    io.Writer     // stderr
	diag *switchWriter // while it writes elsewhere, the app owns the terminal
	on   bool          // stderr is a terminal
	// tick returns a channel that delivers a value each second, and its stop.
	tick func() (<-chan time.Time, func())

	mu       sync.Mutex
	inflight int
	stop     chan struct{}
}

func newWaitNotice(w io.Writer, diag *switchWriter, terminal bool) *waitNotice {
	return &waitNotice{w: w, diag: diag, on: terminal, tick: func() (<-chan time.Time, func()) {
		t := time.NewTicker(time.Second)
		return t.C, t.Stop
	}}
}

// begin counts a request going out; the function it returns counts it done.
func (n *waitNotice) begin() (done func()) {
	if n == nil || !n.on {
		return func() {}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inflight++
	if n.inflight == 1 {
		n.stop = make(chan struct{})
		c, stop := n.tick()
		go n.run(c, stop, n.stop)
	}
	return sync.OnceFunc(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.inflight--
		if n.inflight == 0 {
			close(n.stop)
		}
	})
}

// run shows the seconds waited on each tick until stop closes, then erases
// the line if it wrote one.
func (n *waitNotice) run(ticks <-chan time.Time, stopTicks func(), stop <-chan struct{}) {
	defer stopTicks()
	shown, secs := false, 0
	for {
		select {
		case <-stop:
			if shown {
				n.write("\r\x1b[K")
			}
			return
		case <-ticks:
			secs++
			if n.diag != nil && n.diag.current() != n.w {
				continue // the app owns the terminal: it says so itself
			}
			n.write(fmt.Sprintf("\r\x1b[Kwaiting for the server… (%ds)", secs))
			shown = true
		}
	}
}

func (n *waitNotice) write(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = io.WriteString(n.w, s)
}
