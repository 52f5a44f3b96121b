package tui

import (
	"container/heap"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/shipkey/shipkey/store"
)

// keyIndex is the key list as the app keeps it: one compact row a key
// (KeyRow), in the order the store lists them (by label; a team's keys
// after), in chunks of rowChunk rows (a load never copies them to grow),
// their strings in a few large buffers. It is built once per load,
// away from Update, and never changed (another process's use of a few
// keys makes a copy that shares all but their chunks: with): the screens that show keys share it
// (the keys table sorts and filters indexes into it, the Request screen
// steps through it) and read a key's whole record from the store only when
// they need it. At 100,000 keys it is about 13 MB (a []store.Key of them is
// 10 times that).
type keyIndex struct {
	chunks  [][]KeyRow // row i is chunks[i/rowChunk][i%rowChunk]
	n       int        // rows
	byLabel []int32    // indexes of rows in label order
	bytes   int64      // about what it holds (rows, strings, indexes)
}

// rowChunk is how many rows a chunk of a keyIndex holds (the first grows
// up to it).
const rowChunk = 4096

// row is row i.
func (x *keyIndex) row(i int32) *KeyRow { return &x.chunks[i/rowChunk][i%rowChunk] }

// append adds r as the last row.
func (x *keyIndex) append(r KeyRow) {
	if len(x.chunks) == 0 || len(x.chunks[len(x.chunks)-1]) >= rowChunk {
		c := 8
		if len(x.chunks) > 0 {
			c = rowChunk
		}
		x.chunks = append(x.chunks, make([]KeyRow, 0, c))
	}
	last := &x.chunks[len(x.chunks)-1]
	*last = append(*last, r)
	x.n++
}

// find returns the row of the key labelled label.
func (x *keyIndex) find(label string) (*KeyRow, bool) {
	i, ok := x.indexOf(label)
	if !ok {
		return nil, false
	}
	return x.row(int32(i)), true
}

// indexOf returns the index in rows of the key labelled label.
func (x *keyIndex) indexOf(label string) (int, bool) {
	if x == nil {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(x.byLabel, label, func(r int32, l string) int { return strings.Compare(x.row(r).label, l) })
	if !ok {
		return 0, false
	}
	return int(x.byLabel[i]), true
}

// with returns a copy of x in which the rows of keys (by label, the same
// id) hold them as they are now, and the rows that changed; nil when a
// key has no row (the list changed otherwise: read it all again). Only the
// chunks of those rows are copied: x, which screens and commands share,
// is left as it was.
func (x *keyIndex) with(keys []store.Key) (*keyIndex, []int32) {
	nx := *x
	nx.chunks = slices.Clone(x.chunks)
	copied := map[int]bool{}
	var rows []int32
	for _, k := range keys {
		i, ok := x.indexOf(k.Label)
		if !ok || x.row(int32(i)).id != k.ID {
			return nil, nil
		}
		if c := i / rowChunk; !copied[c] {
			nx.chunks[c] = slices.Clone(x.chunks[c])
			copied[c] = true
		}
		*nx.row(int32(i)) = newKeyRow(k, strings.Clone)
		rows = append(rows, int32(i))
	}
	return &nx, rows
}

// len is the number of keys.
func (x *keyIndex) len() int {
	if x == nil {
		return 0
	}
	return x.n
}

// keyPicks are the few keys a load keeps whole, besides the index: the
// current key's (Welcome shows its user and realm) and the most recently
// created key's (the Get API Key form is prefilled from it).
type keyPicks struct {
	current string     // the key "1" opens, as store.Resolve("") picks it; "" when none
	want    *store.Key // the key labelled as the load was asked (the app's current key), or nil
	detail  *store.Key // the key of the id the load was asked (the details screen's), or nil
	pick    *store.Key // the key labelled current, or nil
	newest  *store.Key // the most recently created key, or nil
}

// indexBuilder builds a keyIndex from a walk of the store (Backend.EachKey).
type indexBuilder struct {
	x      keyIndex
	arena  stringArena
	want   string // the label whose key is kept whole
	wantID string // the id whose key is kept whole
	env    string // $SHIPKEY_KEY: the key "1" opens, when set
	picks  keyPicks
	first  store.Key // the first key (the only one, with one key)
	def    *store.Key
	sorted bool // the labels came in order so far
	// now is when the walk began; renew, the keys' due renewals (a heap
	// once done).
	now   time.Time
	renew renewHeap
}

func newIndexBuilder(want, wantID, env string) *indexBuilder {
	return &indexBuilder{want: want, wantID: wantID, env: env, sorted: true}
}

// add takes one key of the walk.
func (b *indexBuilder) add(k store.Key) error {
	n := b.x.n
	if n > 0 && b.sorted && k.Label <= b.x.row(int32(n-1)).label {
		b.sorted = false
	}
	b.x.append(newKeyRow(k, b.arena.keep))
	if e, ok := renewEntryOf(k, int32(n), b.now); ok {
		b.renew = append(b.renew, e)
	}
	if n == 0 {
		b.first = k
	}
	b.pick(&k)
	return nil
}

// pick keeps a copy of k whole when the app needs it so: the key asked for
// by label (want) or by id (the details'), the one "1" opens ($SHIPKEY_KEY's,
// else the default), the newest.
func (b *indexBuilder) pick(k *store.Key) {
	keep := func() *store.Key { c := *k; return &c }
	if k.Label == b.want && b.want != "" {
		b.picks.want = keep()
	}
	if k.ID == b.wantID && b.wantID != "" {
		b.picks.detail = keep()
	}
	if b.env != "" && k.Label == b.env || b.env == "" && k.Default && b.def == nil {
		b.def = keep()
	}
	if b.picks.newest == nil || k.CreatedAt.After(b.picks.newest.CreatedAt) {
		b.picks.newest = keep()
	}
}

// done returns the index and the keys kept whole.
func (b *indexBuilder) done() (*keyIndex, keyPicks) {
	x := &b.x
	x.byLabel = make([]int32, x.n)
	x.bytes = int64(x.n)*(int64(unsafe.Sizeof(KeyRow{}))+4) + b.arena.bytes
	for i := range x.byLabel {
		x.byLabel[i] = int32(i)
	}
	if !b.sorted {
		slices.SortStableFunc(x.byLabel, func(i, j int32) int { return strings.Compare(x.row(i).label, x.row(j).label) })
	}
	if n := len(b.renew); cap(b.renew)-n > n/8 {
		b.renew = append(make(renewHeap, 0, n), b.renew...) // kept while the list is: no growth slack
	}
	heap.Init(&b.renew)
	// As store.Resolve("") picks: the key $SHIPKEY_KEY names, else the
	// default, else the only key.
	p := b.picks
	switch {
	case b.def != nil:
		p.current, p.pick = b.def.Label, b.def
	case b.env == "" && x.n == 1:
		p.current, p.pick = b.first.Label, &b.first
	}
	return x, p
}

// stringArena keeps many small strings in few large allocations: each
// chunk is a strings.Builder grown once and never beyond its capacity, so
// the strings taken from it stay where they are. Nothing is ever freed but
// the whole (a load's index).
type stringArena struct {
	cur   *strings.Builder
	bytes int64 // allocated
}

const arenaChunk = 64 << 10

// keep returns a copy of s in the arena.
func (a *stringArena) keep(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > arenaChunk/8 {
		a.bytes += int64(len(s))
		return strings.Clone(s)
	}
	if a.cur == nil || a.cur.Cap()-a.cur.Len() < len(s) {
		a.cur = new(strings.Builder)
		a.cur.Grow(arenaChunk)
		a.bytes += arenaChunk
	}
	start := a.cur.Len()
	a.cur.WriteString(s)
	return a.cur.String()[start:]
}
