package tui

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
)

// benchTimerMsg is a timer a benchmark model scheduled; it is never fired.
type benchTimerMsg struct{}

// benchModel builds a model on the fake store at width×height with the
// styles users see (dark theme, colours), runs Init and then presses keys,
// delivering only the model's own messages (like the test harness, but
// without a *testing.T).
func benchModel(b *testing.B, c *clock, st *fakeStore, width, height int, keys ...string) *Model {
	b.Helper()
	m := newModel(config{
		backend:   st,
		verifier:  fakeVerifier{auth.Verification{State: auth.SigVerified, KeyID: "key-1"}},
		now:       c.Now,
		theme:     Theme{Dark: true},
		clipWrite: func(string) error { return nil },
		clipRead:  func() (string, error) { return "", nil },
		after: func(time.Duration, func(time.Time) tea.Msg) tea.Cmd {
			return func() tea.Msg { return benchTimerMsg{} }
		},
	})
	ownPkg := reflect.TypeOf(keysLoadedMsg{}).PkgPath()
	run := func(cmd tea.Cmd) {
		queue := []tea.Cmd{cmd}
		for steps := 0; len(queue) > 0; steps++ {
			if steps > 500 {
				b.Fatal("too many commands")
			}
			c := queue[0]
			queue = queue[1:]
			if c == nil {
				continue
			}
			switch msg := c().(type) {
			case nil, benchTimerMsg, spinner.TickMsg:
			case tea.BatchMsg:
				queue = append(queue, msg...)
			default:
				if reflect.TypeOf(msg).PkgPath() != ownPkg {
					continue // terminal requests, clipboard
				}
				_, next := m.Update(msg)
				queue = append(queue, next)
			}
		}
	}
	_, cmd := m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	run(cmd)
	run(m.Init())
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		run(cmd)
	}
	return m
}

// BenchmarkDetailsTick is what the token details screen costs every second:
// the countdown tick's Update and the redraw, at 100×30. The clock walks the
// first minute after the token was obtained, so every frame's countdowns
// differ and refresh-ahead never fires.
func BenchmarkDetailsTick(b *testing.B) {
	c := &clock{t: t0}
	st := newFakeStore(c)
	st.add("demo", "demo", time.Time{})
	m := benchModel(b, c, st, 100, 30, "1")
	if m.active != screenDetails || m.details.tokens == nil || !m.ticking {
		b.Fatalf("not on a ticking details screen (active %v)", m.active)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		c.mu.Lock()
		c.t = t0.Add(time.Duration(i%60) * time.Second)
		c.mu.Unlock()
		m.Update(tickMsg{gen: m.tickGen, at: c.t})
		if v := m.View(); v.Content == "" {
			b.Fatal("empty view")
		}
	}
}

// BenchmarkDetailsView is the redraw alone (no tick), for comparison.
func BenchmarkDetailsView(b *testing.B) {
	c := &clock{t: t0}
	st := newFakeStore(c)
	st.add("demo", "demo", time.Time{})
	m := benchModel(b, c, st, 100, 30, "1")
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkKeyTable is the API keys table with 200 keys at 100×30: the
// redraw alone, and one countdown tick (rows rebuilt) plus the redraw.
func BenchmarkKeyTable(b *testing.B) {
	c := &clock{t: t0}
	st := newFakeStore(c)
	for i := range 200 {
		st.add(fmt.Sprintf("key-%03d", i), fmt.Sprintf("user%d", i), t0.Add(-time.Duration(i)*time.Minute))
	}
	m := benchModel(b, c, st, 100, 30, "2")
	if m.active != screenKeys || len(m.keyList.visible) != 200 {
		b.Fatalf("active %v, %d rows", m.active, len(m.keyList.visible))
	}
	b.Run("View", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = m.View()
		}
	})
	b.Run("Tick+View", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			c.mu.Lock()
			c.t = t0.Add(time.Duration(i%60) * time.Second)
			c.mu.Unlock()
			m.Update(tickMsg{gen: m.tickGen, at: c.t})
			_ = m.View()
		}
	})
}
