package store

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/fxamacker/cbor/v2"

	"github.com/shipkey/shipkey/auth"
)

// Records in state.db are CBOR maps (RFC 8949) derived from keyEntry and
// keyState by their json tags: self-describing, so a field added to the
// Definition is written and read with no change here and no version number
// to bump, and a record written by a newer shipkey with fields this one
// does not know still decodes. Times are RFC 3339 strings (the location
// offset kept).
//
// Indexes written before hold the old hand-written binary records (version
// 1 and 2: a version byte, length-prefixed strings, varints, time.Time's
// binary form). They are still read (decodeLegacy, read-only); every record
// written now is CBOR. A CBOR map starts with a byte of major type 5
// (0xa0-0xbf), never 1 or 2.

var (
	recordEnc = sync.OnceValue(func() cbor.EncMode {
		em, err := cbor.EncOptions{Time: cbor.TimeRFC3339Nano}.EncMode()
		if err != nil {
			panic(err)
		}
		return em
	})
	// A string field may hold bytes that are not UTF-8 (a label or a masked
	// token is kept as given): the encoder writes them as they are, so the
	// decoder must read them back as they are.
	recordDec = sync.OnceValue(func() cbor.DecMode {
		dm, err := cbor.DecOptions{MaxNestedLevels: 8, MaxArrayElements: 1024, MaxMapPairs: 256, UTF8: cbor.UTF8DecodeInvalid}.DecMode()
		if err != nil {
			panic(err)
		}
		return dm
	})
)

// encodeRecord is the CBOR of v (a keyEntry or keyState).
func encodeRecord(v any) []byte {
	b, err := recordEnc().Marshal(v)
	if err != nil {
		panic("store: a record does not encode: " + err.Error()) // only plain fields: cannot happen
	}
	return b
}

// legacyRecord reports whether b is an old binary record (version 1 or 2).
func legacyRecord(b []byte) bool { return len(b) > 0 && (b[0] == 1 || b[0] == 2) }

// cborMap reports whether b starts as a CBOR map.
func cborMap(b []byte) bool { return len(b) > 0 && b[0]>>5 == 5 }

var errBadRecord = errors.New("damaged record")

type recWriter struct{ b []byte }

func (w *recWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *recWriter) int(v int64) { w.b = binary.AppendVarint(w.b, v) }

func (w *recWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *recWriter) time(t time.Time) {
	if t.IsZero() {
		w.b = append(w.b, 0)
		return
	}
	n := len(w.b)
	w.b = append(w.b, 0)
	w.b, _ = t.AppendBinary(w.b) // fails only for offsets no Location has
	w.b[n] = byte(len(w.b) - n - 1)
}

// recReader decodes a record. Strings it returns are copies (bbolt's memory
// is valid only inside its transaction); a string equal to the one read
// before at the same field (prev) is shared instead of copied: connections
// repeat across keys.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail() {
	if r.err == nil {
		r.err = errBadRecord
	}
	r.b = nil
}

func (r *recReader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		r.fail()
		return nil
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return v
}

func (r *recReader) str() string { return string(r.bytes()) }

// strShared is str that reuses *prev when the bytes are equal.
func (r *recReader) strShared(prev *string) string {
	v := r.bytes()
	if string(v) == *prev { // no allocation: the compiler compares in place
		return *prev
	}
	*prev = string(v)
	return *prev
}

func (r *recReader) int() int64 {
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return v
}

// optInt reads what recWriter wrote as a presence flag and, when present, an
// int: nil when absent.
func (r *recReader) optInt() *int64 {
	if !r.bool() {
		return nil
	}
	v := r.int()
	return &v
}

func (r *recReader) bool() bool {
	if len(r.b) < 1 {
		r.fail()
		return false
	}
	v := r.b[0] != 0
	r.b = r.b[1:]
	return v
}

func (r *recReader) time() time.Time {
	if len(r.b) < 1 {
		r.fail()
		return time.Time{}
	}
	n := int(r.b[0])
	if len(r.b) < 1+n {
		r.fail()
		return time.Time{}
	}
	var t time.Time
	if n > 0 {
		if err := t.UnmarshalBinary(r.b[1 : 1+n]); err != nil {
			r.fail()
			return time.Time{}
		}
		// A time shipkey never wrote (a year past 9999, a zone 200 hours
		// off) is damage; it also has no RFC 3339 form for the record it
		// would be written back as.
		// Nor a nanosecond field past 999999999, which Go's binary form
		// takes unchecked and no other form can hold.
		if _, err := t.MarshalText(); err != nil || t.Nanosecond() > 999_999_999 {
			r.fail()
			return time.Time{}
		}
	}
	r.b = r.b[1+n:]
	return t
}

// encodeEntry encodes a key's definition (the index's copy of its
// [[keys]] table in config.toml).
func encodeEntry(e keyEntry) []byte { return encodeRecord(e) }

// encodeState encodes a key's volatile metadata; token secrets are never
// part of it.
func encodeState(ks keyState) []byte {
	ks.Token = ks.Token.Redacted()
	return encodeRecord(ks)
}

// entryDecoder decodes entries, new and old, sharing the strings that
// repeat from one to the next.
type entryDecoder struct {
	legacy legacyEntryDecoder
	share  fastShare
	slow   int // records the fast decoder left to the library (tests count them)
}

func (d *entryDecoder) decode(b []byte) (keyEntry, error) {
	if legacyRecord(b) {
		return d.legacy.decode(b)
	}
	var e keyEntry // not the library's: on the stack
	if fastDecode(fastEntry(), b, unsafe.Pointer(&e), &d.share) {
		return e, nil
	}
	d.slow++
	return libraryDecode[keyEntry](b)
}

// libraryDecode decodes b with the CBOR library.
func libraryDecode[T keyEntry | keyState](b []byte) (T, error) {
	var v T
	if !cborMap(b) || recordDec().Unmarshal(b, &v) != nil {
		return *new(T), errBadRecord
	}
	return v, nil
}

// stateDecoder decodes state records, new and old, sharing the strings that
// repeat from one to the next.
type stateDecoder struct {
	legacy legacyStateDecoder
	share  fastShare
	slow   int // records the fast decoder left to the library (tests count them)
}

func (d *stateDecoder) decode(b []byte) (keyState, error) {
	if legacyRecord(b) {
		return d.legacy.decode(b)
	}
	var ks keyState // not the library's: on the stack
	if fastDecode(fastState(), b, unsafe.Pointer(&ks), &d.share) {
		return ks, nil
	}
	d.slow++
	return libraryDecode[keyState](b)
}

// legacyEncodeEntry is how entries were written before (version 2), kept
// for the tests that check old records still decode.
func legacyEncodeEntry(e keyEntry) []byte {
	w := recWriter{b: make([]byte, 0, 160)}
	w.b = append(w.b, 2)
	w.str(e.ID)
	w.str(e.Label)
	w.str(e.AuthURL)
	w.str(e.Realm)
	w.str(e.ClientID)
	w.str(e.TokenURL)
	w.str(e.Issuer)
	w.int(int64(len(e.Scopes)))
	for _, sc := range e.Scopes {
		w.str(sc)
	}
	w.bool(e.BasicAuth)
	w.str(e.Username)
	w.bool(e.RememberPassword)
	w.time(e.CreatedAt)
	// version 2
	w.str(string(e.Grant))
	w.int(int64(e.CallbackPort))
	w.bool(e.PublicClient)
	return w.b
}

// legacyEntryDecoder decodes old entries, sharing the strings that repeat.
type legacyEntryDecoder struct {
	authURL, realm, clientID, tokenURL, issuer, username, grant string
	scopes                                                      []string
}

func (d *legacyEntryDecoder) decode(b []byte) (keyEntry, error) {
	if !legacyRecord(b) {
		return keyEntry{}, errBadRecord
	}
	v := b[0]
	r := recReader{b: b[1:]}
	var e keyEntry
	e.ID = r.str()
	e.Label = r.str()
	e.AuthURL = r.strShared(&d.authURL)
	e.Realm = r.strShared(&d.realm)
	e.ClientID = r.strShared(&d.clientID)
	e.TokenURL = r.strShared(&d.tokenURL)
	e.Issuer = r.strShared(&d.issuer)
	if n := r.int(); n > 0 && n < 1024 {
		same := int(n) == len(d.scopes)
		scopes := make([]string, n)
		for i := range scopes {
			v := r.bytes()
			if same && string(v) == d.scopes[i] {
				scopes[i] = d.scopes[i]
			} else {
				same = false
				scopes[i] = string(v)
			}
		}
		if same {
			e.Scopes = d.scopes
		} else {
			e.Scopes, d.scopes = scopes, scopes
		}
	} else if n != 0 {
		r.fail()
	}
	e.BasicAuth = r.bool()
	e.Username = r.strShared(&d.username)
	e.RememberPassword = r.bool()
	e.CreatedAt = r.time()
	if v >= 2 {
		e.Grant = auth.GrantType(r.strShared(&d.grant))
		if p := r.int(); p >= 0 && p <= 65535 {
			e.CallbackPort = int(p)
		} else {
			r.fail()
		}
		e.PublicClient = r.bool()
		if len(r.b) > 0 { // written for a while: the client authentication, trailing
			e.ClientAuth = auth.ClientAuthMethod(r.str())
		}
	}
	return e, r.err
}

// legacyEncodeState is how state records were written before (version 2),
// kept for the tests that check old records still decode.
func legacyEncodeState(ks keyState) []byte {
	w := recWriter{b: make([]byte, 0, 160)}
	w.b = append(w.b, 2)
	w.time(ks.LastUsed)
	t := ks.Token
	w.str(t.TokenType)
	w.int(t.ExpiresIn)
	w.int(t.RefreshExpiresIn)
	w.bool(t.NotBeforePolicy != nil) // absent is not 0: show only what the server sent
	if t.NotBeforePolicy != nil {
		w.int(*t.NotBeforePolicy)
	}
	w.str(t.RefreshExpirySource)
	w.str(t.SessionState)
	w.str(t.Scope)
	w.time(t.ObtainedAt)
	w.time(t.AccessExpiresAt)
	w.time(t.RefreshExpiresAt)
	w.time(t.JWTExpiresAt)
	w.str(ks.Masked)
	w.bool(ks.LoggedOut)
	w.str(ks.Secrets)
	// version 2
	w.bool(ks.NoRefresh)
	if !ks.EndPending.IsZero() {
		// An optional trailing field: records without it (and decoders
		// that stop before it) mean no pending end.
		w.time(ks.EndPending)
	}
	return w.b
}

// legacyStateDecoder decodes old state records, sharing the strings that
// repeat.
type legacyStateDecoder struct{ tokenType, scope, secrets, refreshSource string }

func (d *legacyStateDecoder) decode(b []byte) (keyState, error) {
	if !legacyRecord(b) {
		return keyState{}, errBadRecord
	}
	v := b[0]
	r := recReader{b: b[1:]}
	var ks keyState
	ks.LastUsed = r.time()
	ks.Token = auth.TokenSet{
		TokenType:           r.strShared(&d.tokenType),
		ExpiresIn:           r.int(),
		RefreshExpiresIn:    r.int(),
		NotBeforePolicy:     r.optInt(),
		RefreshExpirySource: r.strShared(&d.refreshSource),
		SessionState:        r.str(),
		Scope:               r.strShared(&d.scope),
		ObtainedAt:          r.time(),
		AccessExpiresAt:     r.time(),
		RefreshExpiresAt:    r.time(),
		JWTExpiresAt:        r.time(),
	}
	ks.Masked = r.str()
	ks.LoggedOut = r.bool()
	ks.Secrets = r.strShared(&d.secrets)
	if v >= 2 {
		ks.NoRefresh = r.bool()
		if len(r.b) > 0 {
			ks.EndPending = r.time()
		}
	}
	return ks, r.err
}

// decodeID decodes only a definition's key id (a walk's first step).
func (d *entryDecoder) decodeID(b []byte) (string, error) {
	if legacyRecord(b) {
		e, err := d.legacy.decode(b)
		return e.ID, err
	}
	var e struct {
		ID string `json:"id"`
	}
	if !cborMap(b) || recordDec().Unmarshal(b, &e) != nil {
		return "", errBadRecord
	}
	return e.ID, nil
}
