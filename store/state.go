package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// keyState is one key's volatile metadata, kept in state.db by key ID (see
// index.go). Never a secret.
type keyState struct {
	LastUsed  time.Time     `json:"last_used,omitzero"`
	Token     auth.TokenSet `json:"token,omitzero"` // always Redacted
	Masked    string        `json:"masked,omitempty"`
	LoggedOut bool          `json:"logged_out,omitempty"`
	// Secrets names the backend that holds this key's secrets ("keyring",
	// "file", "plaintext", "memory"): not a secret, and it lets an "auto"
	// store find secrets written before the keyring appeared or vanished.
	Secrets string `json:"secrets,omitempty"`
	// EndPending is when ending the session at the server failed: the
	// tokens are kept (in the secrets backend) until a retry ends it.
	EndPending time.Time `json:"end_pending,omitzero"`
	// NoRefresh: the stored token set carries no refresh token (a client
	// credentials grant's), so the key is never "refreshable".
	NoRefresh bool `json:"no_refresh,omitempty"`
}

// legacyStateFile is state.json, where shipkey kept every key's metadata in
// one file before state.db; read only to migrate it.
type legacyStateFile struct {
	Version int                 `json:"version"`
	Keys    map[string]keyState `json:"keys"` // by key ID
}

const (
	legacyStateFileName = "state.json"
	legacyStateVersion  = 1
)

func legacyStatePath(dir string) string { return filepath.Join(dir, legacyStateFileName) }

// loadLegacyState reads state.json; found is false when there is none. A file
// that is empty, null or damaged is an error naming it: never an empty state.
func loadLegacyState(path string) (st *legacyStateFile, found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fileError("read", path, err)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, true, corruptError(path, 1, "it holds null instead of the keys' metadata (a damaged write?)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		return nil, true, corruptError(path, jsonErrorLine(data, err), jsonErrorText(err))
	}
	if dec.More() {
		return nil, true, corruptError(path, 0, "unexpected data after the JSON object")
	}
	if st.Version > legacyStateVersion {
		return nil, true, corruptError(path, 0, fmt.Sprintf("written by a newer shipkey (version %d)", st.Version))
	}
	if st.Keys == nil {
		st.Keys = map[string]keyState{}
	}
	return st, true, nil
}

// jsonErrorLine finds the line of a JSON syntax or type error (0 if unknown).
func jsonErrorLine(data []byte, err error) int {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	}
	if off < 0 {
		return 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func jsonErrorText(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	}
	return "invalid JSON: " + err.Error()
}

// setToken records the metadata of ts (nil: no token): its redacted timing,
// the masked access token, whether it carries a refresh token.
func (ks *keyState) setToken(ts *auth.TokenSet) {
	if ts == nil {
		ks.Token, ks.Masked, ks.NoRefresh = auth.TokenSet{}, "", false
		return
	}
	ks.Token = ts.Redacted()
	ks.Masked = text.Mask(ts.AccessToken)
	ks.NoRefresh = ts.RefreshToken == ""
}
