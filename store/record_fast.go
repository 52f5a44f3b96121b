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
	off  uintptr
	kind fastKind
	sub  *fastStruct
}

// fastStruct is a struct's fields as the CBOR map names them (json tags,
// embedded structs' fields promoted), in declaration order.
type fastStruct struct{ fields []fastField }

var (
	fastEntry = sync.OnceValue(func() *fastStruct { return newFastStruct(reflect.TypeFor[keyEntry]()) })
	fastState = sync.OnceValue(func() *fastStruct { return newFastStruct(reflect.TypeFor[keyState]()) })
)

// newFastStruct describes t; nil when a field is of a kind it does not read
// (then every record goes to the library).
func newFastStruct(t reflect.Type) *fastStruct {
	fs := &fastStruct{}
	if !fs.add(t, 0) || len(fs.fields) > 64 {
		return nil
	}
	seen := map[string]bool{}
	for _, f := range fs.fields {
		if seen[f.name] {
			return nil
		}
		seen[f.name] = true
	}
	return fs
}

func (fs *fastStruct) add(t reflect.Type, base uintptr) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			return false // not worth knowing the library's rules for these
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
			if !fs.add(f.Type, base+f.Offset) {
				return false
			}
			continue
		}
		if name == "" {
			return false
		}
		ff := fastField{name: name, off: base + f.Offset}
		switch {
		case f.Type == reflect.TypeFor[time.Time]():
			ff.kind = fastTime
		case f.Type.Kind() == reflect.String:
			ff.kind = fastString
		case f.Type.Kind() == reflect.Bool:
			ff.kind = fastBool
		case f.Type.Kind() == reflect.Int64, f.Type.Kind() == reflect.Int && f.Type.Size() == 8:
			ff.kind = fastInt
		case f.Type == reflect.TypeFor[*int64]():
			ff.kind = fastOptInt
		case f.Type == reflect.TypeFor[[]string]():
			ff.kind = fastStrings
		case f.Type.Kind() == reflect.Struct:
			ff.kind, ff.sub = fastNested, newFastStruct(f.Type)
			if ff.sub == nil {
				return false
			}
		default:
			return false
		}
		fs.fields = append(fs.fields, ff)
	}
	return true
}

// fastDecode decodes b into *p (a zero value of the struct fs describes);
// ok false: leave b to the library (*p may then be partly set).
func fastDecode(fs *fastStruct, b []byte, p unsafe.Pointer) bool {
	if fs == nil {
		return false
	}
	rest, ok := fs.decode(b, p)
	return ok && len(rest) == 0
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

func (fs *fastStruct) decode(b []byte, p unsafe.Pointer) ([]byte, bool) {
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
		f := &fs.fields[i]
		fp := unsafe.Add(p, f.off)
		if b, ok = f.decode(b, fp); !ok {
			return nil, false
		}
	}
	return b, true
}

func (f *fastField) decode(b []byte, fp unsafe.Pointer) ([]byte, bool) {
	switch f.kind {
	case fastString:
		s, rest, ok := cborText(b)
		if !ok {
			return nil, false
		}
		*(*string)(fp) = string(s)
		return rest, true
	case fastBool:
		if len(b) == 0 || (b[0] != 0xf4 && b[0] != 0xf5) {
			return nil, false
		}
		*(*bool)(fp) = b[0] == 0xf5
		return b[1:], true
	case fastInt, fastOptInt:
		major, v, rest, ok := cborHead(b)
		if !ok || (major != 0 && major != 1) || v > math.MaxInt64 {
			return nil, false
		}
		i := int64(v)
		if major == 1 {
			i = -1 - i
		}
		if f.kind == fastInt {
			*(*int64)(fp) = i
		} else {
			q := new(int64)
			*q = i
			*(**int64)(fp) = q
		}
		return rest, true
	case fastTime:
		if len(b) > 0 && b[0] == 0xf6 { // null: the zero time
			return b[1:], true
		}
		s, rest, ok := cborText(b)
		if !ok {
			return nil, false
		}
		t, err := time.Parse(time.RFC3339, string(s))
		if err != nil {
			return nil, false
		}
		*(*time.Time)(fp) = t
		return rest, true
	case fastStrings:
		major, n, rest, ok := cborHead(b)
		if !ok || major != 4 || n == 0 || n > 1024 {
			return nil, false
		}
		ss := make([]string, n)
		for i := range ss {
			var s []byte
			if s, rest, ok = cborText(rest); !ok {
				return nil, false
			}
			ss[i] = string(s)
		}
		*(*[]string)(fp) = ss
		return rest, true
	case fastNested:
		return f.sub.decode(b, fp)
	}
	return nil, false
}
