package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// progressDelay is how long a transfer runs before its progress is shown:
// a quick answer shows nothing.
const progressDelay = time.Second

// progress shows a transfer's progress on a terminal (stderr): bytes so far,
// and a bar with the share done when the size is known. It writes nothing
// for a transfer that ends within progressDelay.
type progress struct {
	w     io.Writer
	total int64 // -1 unknown
	n     atomic.Int64
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

func startProgress(w io.Writer, total int64) *progress {
	p := &progress{w: w, total: total, done: make(chan struct{})}
	p.wg.Add(1)
	go p.run()
	return p
}

// Write counts p's bytes (it is the tee of the body).
func (p *progress) Write(b []byte) (int, error) {
	p.n.Add(int64(len(b)))
	return len(b), nil
}

func (p *progress) run() {
	defer p.wg.Done()
	select {
	case <-p.done:
		return
	case <-time.After(progressDelay):
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		p.draw()
		select {
		case <-p.done:
			fmt.Fprint(p.w, "\r\x1b[K")
			return
		case <-t.C:
		}
	}
}

// draw writes the bar straight to p.w, not through text.Writer: it is the
// program's own control sequences (carriage return, erase line) and
// numbers, no untrusted text.
func (p *progress) draw() {
	n := p.n.Load()
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s", text.Bytes(n))
		return
	}
	const width = 30
	frac := float64(n) / float64(p.total)
	frac = min(max(frac, 0), 1)
	full := int(frac * width)
	fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %3.0f%% %s of %s", strings.Repeat("=", full), strings.Repeat(" ", width-full), frac*100, text.Bytes(n), text.Bytes(p.total))
}

// stop ends the display and clears its line.
func (p *progress) stop() {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}
