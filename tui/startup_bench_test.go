package tui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// startupTimerMsg stands for a timer the app scheduled during start-up; it
// is never fired (the 1 s countdown tick would otherwise block the run).
type startupTimerMsg struct{}

// BenchmarkAppStartup is the interactive app's start-up on a real store
// (storetest.Populate, plaintext backend, cached under the temp dir) of 1, 1k,
// 10k and 100k keys, at 100×30, with the options cmd/shipkey builds:
//
//   - first_frame: tui.New, Init, the WindowSizeMsg and the first
//     View().Content (the welcome screen, before the key list arrives);
//   - keys_shown: that, then the Init commands run (the key list read from
//     the store and fed back into Update), "2" pressed, and View rendered
//     until the API keys table shows its first row. load-ms/op is the part
//     spent in the commands (the store), view-ms/op the table's first
//     render.
//
// The store is opened once per size, outside the timed loop. With -short
// only 1 and 1k keys run.
func BenchmarkAppStartup(b *testing.B) {
	b.Setenv(store.EnvKey, "") // the default key, as storetest.Store.Env sets it
	client, err := auth.NewClient(auth.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			if testing.Short() && n > 1000 {
				b.Skip("-short: 10k and 100k keys skipped")
			}
			ss := storetest.Populate(b, n, store.BackendPlaintext)
			st, err := store.Open(ss.Options())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			opts := Options{Store: st, Auth: client, Now: time.Now}
			firstRow := storetest.Label(0) // the table sorts by label

			b.Run("first_frame", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					startupFrame(b, opts)
				}
				reportMs(b, b.Elapsed(), "ms/op")
			})

			b.Run("keys_shown", func(b *testing.B) {
				b.ReportAllocs()
				var load, view time.Duration
				for b.Loop() {
					m, init := startupFrame(b, opts)
					t := time.Now()
					startupRun(b, m, init)
					_, cmd := m.Update(keyMsg("2"))
					startupRun(b, m, cmd)
					load += time.Since(t)
					if m.active != screenKeys || m.keyList.keys.len() != n {
						b.Fatalf("active %v, %d rows, want %v and %d", m.active, m.keyList.keys.len(), screenKeys, n)
					}
					t = time.Now()
					for tries := 0; ; tries++ {
						if strings.Contains(m.View().Content, firstRow) {
							break
						}
						if tries == 10 {
							b.Fatalf("the table never showed %q", firstRow)
						}
					}
					view += time.Since(t)
				}
				reportMs(b, b.Elapsed(), "ms/op")
				reportMs(b, load, "load-ms/op")
				reportMs(b, view, "view-ms/op")
			})
		})
	}
}

// startupFrame builds the app as cmd/shipkey does (tui.New), runs Init,
// sizes it to 100×30 and renders the first frame; it returns the model and
// Init's command, not run.
func startupFrame(b testing.TB, opts Options) (*Model, tea.Cmd) {
	m := New(opts)
	// Timers are recorded, not waited for (as in benchModel).
	m.cfg.after = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return startupTimerMsg{} }
	}
	init := m.Init()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	if m.View().Content == "" {
		b.Fatal("empty first frame")
	}
	return m, init
}

// startupRun runs cmd and what follows from it, delivering the model's own
// messages (the key list) and dropping terminal requests and timers.
func startupRun(b testing.TB, m *Model, cmd tea.Cmd) {
	own := reflect.TypeOf(keysLoadedMsg{}).PkgPath()
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
		case nil, startupTimerMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case keysLoadedMsg:
			if msg.err != nil {
				b.Fatalf("loading the keys: %v", msg.err)
			}
			_, next := m.Update(msg)
			queue = append(queue, next)
		default:
			if reflect.TypeOf(msg).PkgPath() != own {
				continue // terminal requests (background colour)
			}
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// reportMs reports d per iteration in milliseconds.
func reportMs(b *testing.B, d time.Duration, unit string) {
	if b.N > 0 {
		b.ReportMetric(float64(d)/float64(time.Millisecond)/float64(b.N), unit)
	}
}
