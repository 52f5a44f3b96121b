package store

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// A walk decodes two records a key (keys list and status at 100,000 keys:
// a third of their CPU time in the CBOR library, which checks every record
// whole, then finds each field through a map and sets it through reflect).
// fastRecord decodes the records shipkey writes, a map of the fields in
// declaration order with plain values, straight into the struct; anything
// else (a field it does not know, a tag, an indefinite length, a value of
// another type, a duplicate) is left to the library (ok false), so it
// decodes nothing the library would not decode the same way
// (FuzzFastRecord checks that).

// fastKind is how a field's value is read.
type fastKind uint8

const (
	fastString fastKind = iota + 1 // a text string, into a string kind
	fastBool
	fastInt     // an int or int64
	fastOptInt  // *int64
	fastTime    // an RFC 3339 text string or null
	fastStrings // a non-empty array of text strings
	fastNested
)

type fastField struct {
	name string
	off  uintptr // from the start of the outermost struct
	kind fastKind
	slot int // where a fastShare keeps this field's value from the record before
	sub  *fastStruct
}

// fastStruct is a struct's fields as the CBOR map names them (json tags,
// embedded structs' fields promoted), in declaration order.
type fastStruct struct {
	fields []fastField
	slots  int // fields in all, nested ones too (on the outermost struct)
}

var (
	fastEntry = sync.OnceValue(func() *fastStruct { return newFastStruct(reflect.TypeFor[keyEntry]()) })
	fastState = sync.OnceValue(func() *fastStruct { return newFastStruct(reflect.TypeFor[keyState]()) })
)

// newFastStruct describes t; nil when a field is of a kind it does not read
// (then every record goes to the library).
func newFastStruct(t reflect.Type) *fastStruct {
	fs := &fastStruct{}
	slots := 0
	if !fs.add(t, 0, &slots) || len(fs.fields) > 64 {
		return nil
	}
	fs.slots = slots
	if !uniqueNames(fs.fields) {
		return nil
	}
	return fs
}

func uniqueNames(fields []fastField) bool {
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.name] {
			return false
		}
		seen[f.name] = true
	}
	return true
}

func (fs *fastStruct) add(t reflect.Type, base uintptr, slots *int) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			return false // not worth knowing the library's rules for these
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
			if !fs.add(f.Type, base+f.Offset, slots) {
				return false
			}
			continue
		}
		if name == "" {
			return false
		}
		ff := fastField{name: name, off: base + f.Offset, slot: *slots}
		*slots++
		kind, ok := fastKindOf(f.Type)
		if !ok {
			return false
		}
		ff.kind = kind
		if kind == fastNested {
			ff.sub = &fastStruct{}
			if !ff.sub.add(f.Type, base+f.Offset, slots) || len(ff.sub.fields) > 64 || !uniqueNames(ff.sub.fields) {
				return false
			}
		}
		fs.fields = append(fs.fields, ff)
	}
	return true
}

// fastKinds are the field types the fast decoder reads, in order: the
// first that matches is the field's kind.
var fastKinds = []struct {
	is   func(t reflect.Type) bool
	kind fastKind
}{
	{func(t reflect.Type) bool { return t == reflect.TypeFor[time.Time]() }, fastTime},
	{func(t reflect.Type) bool { return t.Kind() == reflect.String }, fastString},
	{func(t reflect.Type) bool { return t.Kind() == reflect.Bool }, fastBool},
	{func(t reflect.Type) bool {
		return t.Kind() == reflect.Int64 || t.Kind() == reflect.Int && t.Size() == 8
	}, fastInt},
	{func(t reflect.Type) bool { return t == reflect.TypeFor[*int64]() }, fastOptInt},
	{func(t reflect.Type) bool { return t == reflect.TypeFor[[]string]() }, fastStrings},
	{func(t reflect.Type) bool { return t.Kind() == reflect.Struct }, fastNested},
}

// fastKindOf is the kind of a field of type t; false when the fast decoder
// does not read it.
func fastKindOf(t reflect.Type) (fastKind, bool) {
	for _, k := range fastKinds {
		if k.is(t) {
			return k.kind, true
		}
	}
	return 0, false
}

// fastDecode decodes b into *p (a zero value of the struct fs describes);
// ok false: leave b to the library (*p may then be partly set). A field's
// value equal to the one sh kept from the record before is shared (sh nil:
// nothing is); the other strings are copied into one allocation.
func fastDecode(fs *fastStruct, b []byte, p unsafe.Pointer, sh *fastShare) bool {
	if fs == nil {
		return false
	}
	if sh != nil && len(sh.prev) != fs.slots {
		// A decoder's first record (often its only one, a lookup)
		// shares nothing; a walk's next ones share.
		if sh.prev == nil && !sh.started {
			sh.started, sh = true, nil
		} else {
			sh.prev = make([]fastPrev, fs.slots)
		}
	}
	d := fastDec{share: sh}
	rest, ok := fs.decode(&d, b, p)
	if !ok || len(rest) != 0 {
		if sh != nil {
			clear(sh.prev) // it may hold a value of this record's
		}
		return false
	}
	d.copyStrings(p)
	return true
}

// fastShare is what a decoder keeps of the record before, by field: keys
// listed one after another mostly repeat their connection (its URLs,
// client, scopes) and their token's type and scope.
type fastShare struct {
	prev    []fastPrev // by fastField.slot
	started bool       // a record was decoded
	// arena is where the strings of a walk's records are copied, many
	// records' to an allocation: bytes up to its length are never
	// written again (they are strings), the next record's go after them.
	arena []byte
	// arenas counts the arenas made: a walk's strings take one every
	// fifty keys or so, fewer than one a key (tests count them).
	arenas int
}

// fastArena is the size of a walk's string arena (about fifty keys'
// strings; a key kept keeps at most this much alive with it).
const fastArena = 2 << 10

type fastPrev struct {
	s    string
	list []string
	i    *int64
}

// fastDec is one record's decoding: the strings read are copied at the end,
// all into one allocation.
type fastDec struct {
	share   *fastShare
	pending [32]fastPending
	n       int // of pending
	size    int // their bytes
}

// fastPending is a string to copy: into the field at off, or into *elem (a
// list's element; the field's address is not kept, so that the struct
// decoded into can stay on the stack), and into share.prev[slot] when slot
// is not negative.
type fastPending struct {
	off  uintptr
	elem *string
	src  []byte
	slot int
}

// setField sets the string field at off of the struct at root, sharing the
// value of the record before when equal, else copied later.
func (d *fastDec) setField(root unsafe.Pointer, f *fastField, s []byte) {
	if len(s) == 0 {
		return // already ""
	}
	if d.share != nil && d.share.prev[f.slot].s == string(s) {
		*(*string)(unsafe.Add(root, f.off)) = d.share.prev[f.slot].s
		return
	}
	if d.n == len(d.pending) {
		v := string(s)
		*(*string)(unsafe.Add(root, f.off)) = v
		if d.share != nil {
			d.share.prev[f.slot].s = v
		}
		return
	}
	d.pending[d.n] = fastPending{off: f.off, src: s, slot: f.slot}
	d.n++
	d.size += len(s)
}

// setElem sets a list's element (in the heap) to a copy of s, made later.
func (d *fastDec) setElem(elem *string, s []byte) {
	switch {
	case len(s) == 0:
	case d.n == len(d.pending):
		*elem = string(s)
	default:
		d.pending[d.n] = fastPending{elem: elem, src: s, slot: -1}
		d.n++
		d.size += len(s)
	}
}

// copyStrings copies the pending strings into one allocation (they are
// kept, and freed, together, as they were read together), or a walk's into
// its arena.
func (d *fastDec) copyStrings(root unsafe.Pointer) {
	if d.n == 0 {
		return
	}
	var buf []byte
	if d.share != nil { // a walk: into the arena
		if cap(d.share.arena)-len(d.share.arena) < d.size {
			d.share.arena = make([]byte, 0, max(fastArena, d.size))
			d.share.arenas++
		}
		buf = d.share.arena[len(d.share.arena):]
	} else {
		buf = make([]byte, 0, d.size)
	}
	for _, p := range d.pending[:d.n] {
		buf = append(buf, p.src...) // within its capacity: in place
	}
	if d.share != nil {
		d.share.arena = d.share.arena[:len(d.share.arena)+len(buf)]
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) // never written again
	for _, p := range d.pending[:d.n] {
		var v string
		v, all = all[:len(p.src)], all[len(p.src):]
		if p.elem != nil {
			*p.elem = v
			continue
		}
		*(*string)(unsafe.Add(root, p.off)) = v
		if d.share != nil {
			d.share.prev[p.slot].s = v
		}
	}
}

// cborHead reads a CBOR item's head with a definite argument.
func cborHead(b []byte) (major byte, arg uint64, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, 0, nil, false
	}
	major, ai := b[0]>>5, b[0]&31
	b = b[1:]
	switch {
	case ai < 24:
		return major, uint64(ai), b, true
	case ai == 24 && len(b) >= 1:
		return major, uint64(b[0]), b[1:], true
	case ai == 25 && len(b) >= 2:
		return major, uint64(b[0])<<8 | uint64(b[1]), b[2:], true
	case ai == 26 && len(b) >= 4:
		return major, uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]), b[4:], true
	case ai == 27 && len(b) >= 8:
		var v uint64
		for _, c := range b[:8] {
			v = v<<8 | uint64(c)
		}
		return major, v, b[8:], true
	}
	return 0, 0, nil, false
}

// cborText reads a definite-length text string (its bytes, not copied).
func cborText(b []byte) (s, rest []byte, ok bool) {
	major, n, b, ok := cborHead(b)
	if !ok || major != 3 || n > uint64(len(b)) {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}

// decode decodes a map of fs's fields into the outermost struct, at root.
func (fs *fastStruct) decode(d *fastDec, b []byte, root unsafe.Pointer) ([]byte, bool) {
	major, n, b, ok := cborHead(b)
	if !ok || major != 5 || n > 256 {
		return nil, false
	}
	var seen uint64
	next := 0
	for range n {
		var key []byte
		if key, b, ok = cborText(b); !ok {
			return nil, false
		}
		// Records list the fields in order: most often the next one.
		i := next
		for i < len(fs.fields) && fs.fields[i].name != string(key) {
			i++
		}
		if i == len(fs.fields) {
			for i = 0; i < next && fs.fields[i].name != string(key); i++ {
			}
			if i == next {
				return nil, false // not a field of ours
			}
		}
		if seen&(1<<i) != 0 {
			return nil, false
		}
		seen |= 1 << i
		next = i + 1
		if b, ok = fs.fields[i].decode(d, b, root); !ok {
			return nil, false
		}
	}
	return b, true
}

// decode reads the field's value from b into the struct at root, by the
// field's kind, and returns what follows it.
func (f *fastField) decode(d *fastDec, b []byte, root unsafe.Pointer) ([]byte, bool) {
	fp := unsafe.Add(root, f.off)
	switch f.kind {
	case fastString:
		s, rest, ok := cborText(b)
		if !ok {
			return nil, false
		}
		d.setField(root, f, s)
		return rest, true
	case fastBool:
		return cborBool(b, (*bool)(fp))
	case fastInt, fastOptInt:
		return f.decodeInt(d, b, fp)
	case fastTime:
		return cborTime(b, (*time.Time)(fp))
	case fastStrings:
		return d.strings(b, (*[]string)(fp), f.slot)
	case fastNested:
		return f.sub.decode(d, b, root)
	}
	return nil, false
}

// cborBool reads a CBOR true or false into *dst.
func cborBool(b []byte, dst *bool) ([]byte, bool) {
	if len(b) == 0 || (b[0] != 0xf4 && b[0] != 0xf5) {
		return nil, false
	}
	*dst = b[0] == 0xf5
	return b[1:], true
}

// cborTime reads an RFC 3339 text string into *dst, null as the zero time.
func cborTime(b []byte, dst *time.Time) ([]byte, bool) {
	if len(b) > 0 && b[0] == 0xf6 { // null: the zero time
		return b[1:], true
	}
	s, rest, ok := cborText(b)
	if !ok {
		return nil, false
	}
	// What time.Parse(time.RFC3339, s) returns (the library's reading),
	// without copying s into a string.
	if dst.UnmarshalText(s) != nil {
		return nil, false
	}
	return rest, true
}

// decodeInt reads a CBOR integer (one an int64 holds) into the field at fp:
// an int64, or for fastOptInt a *int64, the record before's pointer when
// the value is the same.
func (f *fastField) decodeInt(d *fastDec, b []byte, fp unsafe.Pointer) ([]byte, bool) {
	major, v, rest, ok := cborHead(b)
	if !ok || (major != 0 && major != 1) || v > math.MaxInt64 {
		return nil, false
	}
	i := int64(v)
	if major == 1 {
		i = -1 - i
	}
	switch {
	case f.kind == fastInt:
		*(*int64)(fp) = i
	case d.share != nil && d.share.prev[f.slot].i != nil && *d.share.prev[f.slot].i == i:
		*(**int64)(fp) = d.share.prev[f.slot].i
	default:
		q := new(int64)
		*q = i
		*(**int64)(fp) = q
		if d.share != nil {
			d.share.prev[f.slot].i = q
		}
	}
	return rest, true
}

// strings reads a non-empty array of text strings into *dst: the list of
// the record before when equal.
func (d *fastDec) strings(b []byte, dst *[]string, slot int) ([]byte, bool) {
	major, n, b, ok := cborHead(b)
	if !ok || major != 4 || n == 0 || n > 1024 {
		return nil, false
	}
	var prev []string
	if d.share != nil {
		prev = d.share.prev[slot].list
	}
	same, rest := uint64(len(prev)) == n, b
	for i := range n {
		var s []byte
		if s, rest, ok = cborText(rest); !ok {
			return nil, false
		}
		same = same && prev[i] == string(s)
	}
	if same {
		*dst = prev
		return rest, true
	}
	ss := make([]string, n)
	for i := range ss {
		var s []byte
		s, b, _ = cborText(b) // read above
		d.setElem(&ss[i], s)
	}
	*dst = ss
	if d.share != nil {
		d.share.prev[slot].list = ss // its strings set by copyStrings, or fastDecode forgets it
	}
	return rest, true
}
