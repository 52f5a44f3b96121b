package tui

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// freshKeys is a backend of n keys made afresh on every walk, as the store
// decodes them (a key's own strings new, the connection's shared): whatever
// the app keeps of a key, it keeps by its own choice.
type freshKeys struct {
	*fakeStore
	n int
}

func (b *freshKeys) key(i int) store.Key {
	now := b.clock.Now()
	access := fmt.Sprintf("eyJhbGciOiJub25lIn0.eyJzdWIiOiJrZXktJWQifQ.%d", i)
	return store.Key{ID: fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15), Label: fmt.Sprintf("key-%07d", i),
		Definition: store.Definition{Username: fmt.Sprintf("user%d", i), Connection: freshKeysConn},
		CreatedAt:  now.Add(-time.Duration(i) * time.Second), Default: i == 0, Masked: text.Mask(access), HasRefreshToken: true,
		Token: auth.TokenSet{TokenType: "Bearer", Scope: "email profile", SessionState: fmt.Sprintf("session-%d", i),
			ExpiresIn: 300, RefreshExpiresIn: 1800, ObtainedAt: now, AccessExpiresAt: now.Add(5 * time.Minute), RefreshExpiresAt: now.Add(30 * time.Minute)}}
}

var freshKeysConn = auth.Connection{AuthURL: "https://auth.example.com", Realm: "shipping", ClientID: "shipping-api", Scopes: []string{"email", "profile"}}

func (b *freshKeys) EachKey(fn func(store.Key) error) error {
	for i := range b.n {
		if err := fn(b.key(i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *freshKeys) Keys() ([]store.Key, error) {
	keys := make([]store.Key, 0, b.n)
	return keys, b.EachKey(func(k store.Key) error { keys = append(keys, k); return nil })
}

func (b *freshKeys) Resolve(label string) (store.Key, error) {
	var i int
	if _, err := fmt.Sscanf(label, "key-%d", &i); err != nil || i >= b.n {
		return store.Key{}, store.ErrNotFound
	}
	return b.key(i), nil
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// showKeyList opens the app on b's keys and shows them on the keys table,
// the Request screen and the filter, as TestKeyListKeepsRowsNotKeys does.
func showKeyList(tb testing.TB, h *harness, n int) {
	h.mustShow("Default key", "key-0000000", fmt.Sprint(n))
	h.press("2")
	h.mustShow("of "+fmt.Sprint(n)+" keys", "key-0000001")
	h.press("4")
	h.mustShow("1 of " + fmt.Sprint(n))
	h.press("esc", "esc")
}

// The app keeps of each key only the keys table's compact row, once for
// every screen, and reads a key whole when a screen needs it: with 20,000
// keys loaded and shown on Welcome, the keys table and the Request screen,
// it never asks the store for the whole keys (Keys), reads at most the one
// key on screen whole (Resolve), and a row is a fixed 96 bytes besides its
// label and masked token. What the heap holds a key is
// BenchmarkKeyListMemoryPerKey's to report: the heap's statistics count the
// collector's timing too.
func TestKeyListKeepsRowsNotKeys(t *testing.T) {
	t.Parallel()
	const n = 20000
	b := &countingKeys{}
	h := newHarnessWith(t, nil, func(c *config) {
		b.freshKeys = freshKeys{fakeStore: c.backend.(*fakeStore), n: n}
		c.backend = b
	})
	showKeyList(t, h, n)
	if b.keys.Load() != 0 || b.resolves.Load() > 1 {
		t.Errorf("the app read the whole keys %d times and %d keys whole; want none and at most the one on screen", b.keys.Load(), b.resolves.Load())
	}
	if size := unsafe.Sizeof(KeyRow{}); size > 96 {
		t.Errorf("a key's row is %d bytes besides its strings, want at most 96", size)
	}
}

// countingKeys is freshKeys counting the whole reads the app asks for.
type countingKeys struct {
	freshKeys
	keys, resolves atomic.Int64
}

func (b *countingKeys) Keys() ([]store.Key, error) {
	b.keys.Add(1)
	return b.freshKeys.Keys()
}

func (b *countingKeys) Resolve(label string) (store.Key, error) {
	b.resolves.Add(1)
	return b.freshKeys.Resolve(label)
}

// BenchmarkKeyListMemoryPerKey reports the heap the app holds a key with
// the key list loaded and shown (the difference in the heap in use between
// 20,000 and 2,000 keys; about 150 bytes with this code, over 1,000 when
// every screen kept a []store.Key). docs/performance.md quotes it.
func BenchmarkKeyListMemoryPerKey(b *testing.B) {
	held := func(n int) int64 {
		before := heapInUse()
		h := newHarnessWith(b, nil, func(c *config) { c.backend = &freshKeys{fakeStore: c.backend.(*fakeStore), n: n} })
		showKeyList(b, h, n)
		after := heapInUse()
		runtime.KeepAlive(h)
		return after - before
	}
	var per float64
	for b.Loop() {
		small, large := held(2000), held(20000)
		per = float64(large-small) / 18000
	}
	b.ReportMetric(per, "B/key")
}

// A label or API key the table shows otherwise than stored, or lower-cased
// otherwise, is found by the filter as shown, and sorts as its lower-cased
// form does; rows keep the rest of a key that few keys have (team, API
// URL) apart.
func TestKeyRowShownAndLowered(t *testing.T) {
	t.Parallel()
	r := NewKeyRow(store.Key{ID: "i", Label: "Prod\x1b[2J", Masked: "eyJhbG…QifQ.5", Team: "ops", Definition: store.Definition{APIURL: "https://api.example"}})
	if r.Shown() == r.Label() || strings.ContainsRune(r.Shown(), '\x1b') {
		t.Errorf("shown %q for label %q", r.Shown(), r.Label())
	}
	if !r.matches("prod") || !r.matches("qifq.5") || r.matches("prod\x1b") {
		t.Errorf("the filter does not match what the row shows: %q, %q", r.lowerLabel(), r.masked)
	}
	if r.Team() != "ops" || r.APIURL() != "https://api.example" {
		t.Errorf("team %q, API URL %q", r.Team(), r.APIURL())
	}
	plain := NewKeyRow(store.Key{ID: "j", Label: "dev"})
	if plain.rare != nil {
		t.Errorf("a plain key keeps %+v", *plain.rare)
	}
	if compareLower("ABC", "abd") >= 0 || compareLower("abc", "ABC") != 0 || compareLower("ab", "abc") >= 0 {
		t.Error("compareLower does not order as lower-cased strings do")
	}
}

// The app keeps no key whole but the current one: another key's details
// open at once under its label ("reading the key…", keys other than esc
// wait), then show what the store read.
func TestDetailsOfAKeyReadOnOpen(t *testing.T) {
	t.Parallel()
	h := openKeyList(t)
	filterTo(h, "stag", "staging")
	h.async()
	h.press("enter")
	h.mustShow("shipkey › Token details", "staging", "reading the key…")
	h.mustNotShow("stage @")
	h.press("l") // nothing to log in yet
	if h.m.details.state != detailsIdle || h.m.details.prompt {
		t.Fatalf("a key pressed while the key is read acted: state %v", h.m.details.state)
	}
	h.pump("the key read", func() bool { return !h.m.details.partial && h.m.details.tokens != nil })
	h.mustShow("staging", "stage @", "Access token")
	h.mustNotShow("reading the key…")
}
