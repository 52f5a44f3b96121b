package tui

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/storetest"
)

// countingStore counts the keys the app reads: by walking them all, and
// as changes.
type countingStore struct {
	*store.Store
	mu              sync.Mutex
	walked, changed int
}

func (c *countingStore) EachKey(fn func(store.Key) error) error {
	return c.Store.EachKey(func(k store.Key) error {
		c.mu.Lock()
		c.walked++
		c.mu.Unlock()
		return fn(k)
	})
}

func (c *countingStore) ChangesSince(since store.Stamp) (store.Changes, error) {
	ch, err := c.Store.ChangesSince(since)
	c.mu.Lock()
	c.changed += len(ch.Keys)
	c.mu.Unlock()
	return ch, err
}

// counts returns and resets the counts.
func (c *countingStore) counts() (walked, changed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	walked, changed = c.walked, c.changed
	c.walked, c.changed = 0, 0
	return walked, changed
}

// TestAnotherProcessUsingAKeyRereadsThatKey: when another shipkey process
// uses a key (its Last Used written), the open app reads that key again,
// not every key: at 100,000 keys a script using a key every 2 s kept the
// idle app at a quarter of a core. A change of config.toml (a rename)
// still reads the whole list.
func TestAnotherProcessUsingAKeyRereadsThatKey(t *testing.T) {
	t.Parallel()
	const n = 40
	dir := t.TempDir()
	ss := storetest.Store{ConfigDir: filepath.Join(dir, "config"), StateDir: filepath.Join(dir, "state"), Backend: store.BackendPlaintext, N: n}
	storetest.Generate(t, ss)
	st, err := store.Open(ss.Options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st}
	m, init := startupFrame(t, Options{Store: st, Backend: cs})
	startupRun(t, m, init)
	if walked, _ := cs.counts(); walked != n || m.keys.len() != n {
		t.Fatalf("the first load read %d keys, holds %d; want %d", walked, m.keys.len(), n)
	}
	m.Update(keyMsg("2")) // the keys table

	other, err := store.Open(ss.Options()) // another process
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	used := storetest.Label(17)
	if r, _ := m.keys.find(used); r.lastUsed != 0 {
		t.Fatalf("%s used already", used)
	}
	if err := other.MarkUsed(used); err != nil {
		t.Fatal(err)
	}
	startupRun(t, m, m.checkStamp())
	if walked, changed := cs.counts(); walked != 0 || changed != 1 {
		t.Errorf("after another process used one key the app read %d keys by a walk and %d as changed; want 0 and 1", walked, changed)
	}
	if r, _ := m.keys.find(used); r == nil || r.lastUsed == 0 {
		t.Errorf("the row of %s does not show its Last Used", used)
	}
	if r, _ := m.keyList.keys.find(used); r == nil || r.lastUsed == 0 {
		t.Errorf("the keys table's row of %s does not show its Last Used", used)
	}
	if got := len(m.keyList.visible); got != n {
		t.Errorf("the keys table shows %d rows, want %d", got, n)
	}
	startupRun(t, m, m.checkStamp())
	if walked, changed := cs.counts(); walked != 0 || changed != 0 {
		t.Errorf("with nothing changed the app read %d keys by a walk and %d as changed", walked, changed)
	}

	// Sorted by Last Used (newest first): a key used moves to the top, as
	// a sort of the whole list would put it.
	l := m.keyList
	l.sortCol, l.desc = ColLastUsed, false
	l.sort()
	l.applyFilter(true)
	for _, i := range []int{5, 30, 5} {
		if err := other.MarkUsed(storetest.Label(i)); err != nil {
			t.Fatal(err)
		}
		startupRun(t, m, m.checkStamp())
		if _, changed := cs.counts(); changed != 1 {
			t.Fatalf("the app read %d keys as changed, want 1", changed)
		}
		moved := slices.Clone(l.sorted)
		l.sort()
		if !slices.Equal(moved, l.sorted) {
			t.Fatalf("after key %d was used the table's order is %v, a sort gives %v", i, moved, l.sorted)
		}
		if top := l.keys.row(l.visible[0]).label; top != storetest.Label(i) {
			t.Errorf("the table's first row is %s, want %s, just used", top, storetest.Label(i))
		}
	}

	if err := other.Rename(storetest.Label(3), "renamed"); err != nil {
		t.Fatal(err)
	}
	startupRun(t, m, m.checkStamp())
	if walked, _ := cs.counts(); walked != n {
		t.Errorf("after a rename the app read %d keys, want all %d", walked, n)
	}
	if _, ok := m.keys.find("renamed"); !ok {
		t.Error("the renamed key is not in the list")
	}
}
