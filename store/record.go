package store

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/shipkey/shipkey/auth"
)

// Records in state.db are a small binary encoding rather than JSON: `keys
// list` decodes every record at 100,000 keys, and JSON costs several times
// more per record. Each record starts with its version byte; strings and
// lists are length-prefixed (uvarint), integers are varints, times are
// time.Time's binary form (location offset kept) behind a length byte.

// recordVersion is what encodeEntry and encodeState write. Version 2 added
// the grant, its callback port and the public-client flag to entries and the
// no-refresh-token flag to states, at their ends; version 1 records (every
// index written before) decode with those fields zero, which is what they
// meant: password grant, a refresh token held.
const recordVersion = 2

// knownRecord reports whether b starts with a version this code decodes.
func knownRecord(b []byte) bool { return len(b) > 0 && (b[0] == 1 || b[0] == recordVersion) }

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
	}
	r.b = r.b[1+n:]
	return t
}

// encodeEntry encodes a key's definition (the index's copy of its
// [[keys]] table in config.toml).
func encodeEntry(e keyEntry) []byte {
	w := recWriter{b: make([]byte, 0, 160)}
	w.b = append(w.b, recordVersion)
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
	if e.ClientAuth != "" {
		// An optional trailing field: records without it mean none chosen.
		w.str(string(e.ClientAuth))
	}
	return w.b
}

// entryDecoder decodes entries, sharing the strings that repeat.
type entryDecoder struct {
	authURL, realm, clientID, tokenURL, issuer, username, grant string
	scopes                                                      []string
}

func (d *entryDecoder) decode(b []byte) (keyEntry, error) {
	if !knownRecord(b) {
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
		if len(r.b) > 0 {
			e.ClientAuth = auth.ClientAuthMethod(r.str())
		}
	}
	return e, r.err
}

// encodeState encodes a key's volatile metadata; token secrets are never
// part of it.
func encodeState(ks keyState) []byte {
	w := recWriter{b: make([]byte, 0, 160)}
	w.b = append(w.b, recordVersion)
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

// stateDecoder decodes state records, sharing the strings that repeat.
type stateDecoder struct{ tokenType, scope, secrets, refreshSource string }

func (d *stateDecoder) decode(b []byte) (keyState, error) {
	if !knownRecord(b) {
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
