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
)

// stateFile is state.json: volatile metadata, never a secret.
type stateFile struct {
	Version int                 `json:"version"`
	Keys    map[string]keyState `json:"keys"` // by key ID
}

// keyState is one key's volatile metadata.
type keyState struct {
	LastUsed  time.Time     `json:"last_used,omitzero"`
	Token     auth.TokenSet `json:"token,omitzero"` // always Redacted
	Masked    string        `json:"masked,omitempty"`
	LoggedOut bool          `json:"logged_out,omitempty"`
	// Secrets names the backend that holds this key's secrets ("keyring",
	// "file", "plaintext", "memory"): not a secret, and it lets an "auto"
	// store find secrets written before the keyring appeared or vanished.
	Secrets string `json:"secrets,omitempty"`
}

const stateVersion = 1

func newStateFile() *stateFile {
	return &stateFile{Version: stateVersion, Keys: map[string]keyState{}}
}

// loadState reads state.json; a missing file is an empty state.
func loadState(path string) (*stateFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newStateFile(), nil
	}
	if err != nil {
		return nil, fileError("read", path, err)
	}
	var st stateFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		return nil, corruptError(path, jsonErrorLine(data, err), jsonErrorText(err))
	}
	if dec.More() {
		return nil, corruptError(path, 0, "unexpected data after the JSON object")
	}
	if st.Version > stateVersion {
		return nil, corruptError(path, 0, fmt.Sprintf("written by a newer shipkey (version %d)", st.Version))
	}
	if st.Keys == nil {
		st.Keys = map[string]keyState{}
	}
	st.Version = stateVersion
	return &st, nil
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

// saveState writes state.json atomically (caller holds store.lock). Token
// secrets are stripped again here, whatever the caller passed.
func saveState(path string, st *stateFile) error {
	for id, k := range st.Keys {
		k.Token = k.Token.Redacted()
		st.Keys[id] = k
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", displayPath(path), err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}

func statePath(dir string) string { return filepath.Join(dir, stateFileName) }
