package tui

import (
	"sync"
	"sync/atomic"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// A store write the program quit before running is run by finish; one
// running when the program ends is waited for; none runs twice.
func TestStoreWritesFinishWhatTheProgramLeft(t *testing.T) {
	t.Parallel()
	var w storeWrites
	var never, ran atomic.Int32
	w.cmd(func() tea.Msg { never.Add(1); return nil }) // the program quit first

	started, release := make(chan struct{}), make(chan struct{})
	running := w.cmd(func() tea.Msg {
		close(started)
		<-release
		ran.Add(1)
		return "written"
	})
	var wg sync.WaitGroup
	var got tea.Msg
	wg.Go(func() { got = running() })
	<-started

	finished := make(chan struct{})
	var ranAtFinish int32
	go func() { w.finish(); ranAtFinish = ran.Load(); close(finished) }()
	close(release)
	<-finished
	wg.Wait()
	if ranAtFinish != 1 {
		t.Fatal("finish returned before the running write ended")
	}
	if never.Load() != 1 || ran.Load() != 1 || got != "written" {
		t.Fatalf("the write never run ran %d times, the running one %d (msg %v); want once each", never.Load(), ran.Load(), got)
	}
	w.finish()
	if never.Load() != 1 || ran.Load() != 1 {
		t.Fatal("a second finish ran a write again")
	}
}
