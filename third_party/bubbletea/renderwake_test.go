package tea

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"
)

// countingRenderer counts the renderer's frames (flush calls).
type countingRenderer struct {
	nilRenderer
	flushes atomic.Int64
}

func (r *countingRenderer) flush(bool) error { r.flushes.Add(1); return nil }

// idleModel renders once and then waits for nothing.
type idleModel struct{}

func (idleModel) Init() Cmd                 { return nil }
func (m idleModel) Update(Msg) (Model, Cmd) { return m, nil }
func (idleModel) View() View                { return NewView("idle") }

// shipkey's patch (PATCH.md): an idle program does no frame work. Upstream
// flushes on a ticker, fps times a second, whatever happens.
func TestIdleProgramFlushesNoFrames(t *testing.T) {
	r := &countingRenderer{}
	p := NewProgram(idleModel{}, WithInput(nil), WithOutput(&bytes.Buffer{}), WithoutSignalHandler(), WithFPS(60))
	p.renderer = r
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	time.Sleep(200 * time.Millisecond) // the first frame and the start-up messages' frames
	before := r.flushes.Load()
	if before == 0 {
		t.Fatal("no first frame")
	}
	time.Sleep(500 * time.Millisecond) // idle: upstream would flush 30 times
	idle := r.flushes.Load() - before
	p.Send(struct{}{}) // a message: one frame
	time.Sleep(100 * time.Millisecond)
	after := r.flushes.Load() - before - idle
	p.Quit()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the program did not quit")
	}
	if idle != 0 {
		t.Fatalf("%d frames flushed in 500 ms of idleness, want 0", idle)
	}
	if after < 1 {
		t.Fatal("no frame after a message")
	}
}
