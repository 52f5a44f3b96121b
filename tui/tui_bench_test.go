package tui

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
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
		verifier:  fakeVerifier{auth.Verification{State: auth.SigVerified, KeyID: text.Trusted("key-1")}},
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

// manyKeys fills st with n keys that share one token set (cheap to make).
func manyKeys(st *fakeStore, n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	ts := fakeTokens(now, "u", 0)
	red := ts.Redacted()
	masked := text.Mask(ts.AccessToken)
	for i := range n {
		label := fmt.Sprintf("key-%06d", i)
		st.keys[label] = store.Key{ID: fmt.Sprintf("id-%d", i), Definition: store.Definition{Username: "u", Connection: auth.Connection{AuthURL: "http://127.0.0.1:8080", Realm: "master", ClientID: "shipping-api"}}, Label: label, Token: red, Masked: masked, HasRefreshToken: true, LastUsed: now.Add(-time.Duration(i) * time.Second)}
		st.tokens[label] = ts
	}
	st.def = "key-000000"
}

var keyCounts = []int{1, 1000, 10000, 100000}

// BenchmarkKeyTableFilter is one filter keystroke on the API keys table
// (Update and View) at 1, 1k, 10k and 100k keys: a character typed, then
// deleted, alternately (goal: < 16 ms at 100k).
func BenchmarkKeyTableFilter(b *testing.B) {
	for _, n := range keyCounts {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			c := &clock{t: t0}
			st := newFakeStore(c)
			manyKeys(st, n)
			m := benchModel(b, c, st, 100, 30, "2", "/", "k", "e", "y")
			if m.active != screenKeys || m.keyList.keys.len() != n {
				b.Fatalf("active %v, %d rows", m.active, m.keyList.keys.len())
			}
			typed, del := keyMsg("1"), keyMsg("backspace")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				msg := typed
				if i%2 == 1 {
					msg = del
				}
				i++
				m.Update(msg)
				_ = m.View()
			}
		})
	}
}

// BenchmarkKeyTableIdleTick is what the API keys table costs every second
// while idle (the tick's Update, with its stamp check, and the redraw) at
// 1, 1k, 10k and 100k keys.
func BenchmarkKeyTableIdleTick(b *testing.B) {
	for _, n := range keyCounts {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			c := &clock{t: t0}
			st := newFakeStore(c)
			manyKeys(st, n)
			m := benchModel(b, c, st, 100, 30, "2")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				c.mu.Lock()
				c.t = t0.Add(time.Duration(i%60) * time.Second)
				c.mu.Unlock()
				_, cmd := m.Update(tickMsg{gen: m.tickGen, at: c.t})
				runBench(m, cmd)
				_ = m.View()
			}
		})
	}
}

// runBench delivers the model's own messages of cmd (the stamp check).
func runBench(m *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case stampMsg, keysLoadedMsg:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
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
