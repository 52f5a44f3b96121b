package tea

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
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

// shipkey's patch (PATCH.md): in the alt screen a frame redraws only the
// lines that changed; the cells end up as a whole redraw would leave them,
// and so does what the terminal is told (the writes differ only in size).
func TestChangedLinesOnlyLeaveTheSameCells(t *testing.T) {
	frames := []string{
		"title\n\x1b[1mbold\x1b[0m line\ncountdown 4:59\nfooter",
		"title\n\x1b[1mbold\x1b[0m line\ncountdown 4:58\nfooter",
		"title\n\x1b[31mred\x1b[0m now\ncountdown 4:57\nfooter",
		"title\nshort\ncountdown 4:56\n\x1b[2mfooter\x1b[0m",
	}
	var out bytes.Buffer
	r := newCursedRenderer(&out, []string{"TERM=xterm-256color"}, 20, 4)
	for i, f := range frames {
		r.render(View{Content: f, AltScreen: true})
		if err := r.flush(false); err != nil {
			t.Fatal(err)
		}
		full := uv.NewScreenBuffer(20, 4)
		uv.NewStyledString(f).Draw(full, full.Bounds())
		for y := range 4 {
			for x := range 20 {
				if a, b := r.cellbuf.CellAt(x, y), full.CellAt(x, y); !a.Equal(b) {
					t.Fatalf("frame %d: cell %d,%d is %+v, a whole redraw gives %+v", i, x, y, a, b)
				}
			}
		}
		if i > 0 && r.drawn == nil {
			t.Fatalf("frame %d was not drawn line by line", i)
		}
	}
}
