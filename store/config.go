package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

const (
	configFileName = "config.toml"
	lockFileName   = "store.lock"

	defaultClipboardClear = 30 * time.Second
)

// configFile is config.toml: non-secret, human-readable, hand-editable, and
// the source of truth for keys and settings (state.db indexes it, see
// index.go).
type configFile struct {
	Default        string     `toml:"default,omitempty"`
	Secrets        string     `toml:"secrets,omitempty"`
	ClipboardClear string     `toml:"clipboard_clear,omitempty"`
	Timeout        string     `toml:"timeout,omitempty"`
	AutoRefresh    *bool      `toml:"auto_refresh,omitempty"`
	Keys           []keyEntry `toml:"keys,omitempty"`
	Teams          []TeamConn `toml:"teams,omitempty"`
}

// keyEntry is one [[keys]] table: a key's id and label, its Definition and
// when it was made. Its encodings (config.toml by its tags, the index record
// by encodeEntry) are derived from it, never written field by field.
type keyEntry struct {
	ID    string `toml:"id" json:"id"`
	Label string `toml:"label" json:"label"`
	Definition
	CreatedAt time.Time `toml:"created_at" json:"created_at"`
}

// newConfigFile is what a store without config.toml starts from.
func newConfigFile() *configFile {
	t := true
	return &configFile{Secrets: "auto", ClipboardClear: defaultClipboardClear.String(), AutoRefresh: &t}
}

// corruptError is the one-line message for a file shipkey cannot read; the
// file is never overwritten after it.
func corruptError(path string, line int, what string) error {
	where := displayPath(path)
	if line > 0 {
		where += fmt.Sprintf(": line %d", line)
	}
	return fmt.Errorf("%s: %s; fix or move it away", where, text.Safe(what))
}

// loadConfig reads config.toml; a missing file is an empty configuration.
func loadConfig(path string) (*configFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newConfigFile(), nil
	}
	if err != nil {
		return nil, fileError("read", path, err)
	}
	return parseConfig(path, data)
}

// parseConfig is loadConfig on config.toml's content, read already.
func parseConfig(path string, data []byte) (*configFile, error) {
	var c configFile
	if err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, corruptError(path, row, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, corruptError(path, 0, strings.TrimPrefix(err.Error(), "toml: "))
	}
	if err := c.validate(); err != nil {
		return nil, corruptError(path, 0, err.Error())
	}
	return &c, nil
}

// validate checks what the TOML decoder cannot: settings' values and the
// uniqueness of key ids and labels.
func (c *configFile) validate() error {
	if c.Secrets != "" && !userBackend(c.Secrets) {
		return fmt.Errorf("secrets = %q is not one of auto, keyring, file, plaintext", c.Secrets)
	}
	if _, err := parseClipboardClear(c.ClipboardClear); err != nil {
		return err
	}
	if c.Timeout != "" {
		if _, err := ParseTimeout("timeout", c.Timeout); err != nil {
			return err
		}
	}
	ids := map[string]bool{}
	labels := map[string]bool{}
	for i, k := range c.Keys {
		switch {
		case k.ID == "":
			return fmt.Errorf("key #%d has no id", i+1)
		case !validID(k.ID):
			return fmt.Errorf("key id %q is not made of letters, digits, - and _ (at most 64)", k.ID)
		case k.Label == "":
			return fmt.Errorf("key #%d has no label", i+1)
		case ids[k.ID]:
			return fmt.Errorf("key id %q appears twice", k.ID)
		case labels[k.Label]:
			return fmt.Errorf("label %q appears twice", k.Label)
		}
		if _, err := auth.ParseClientAuthMethod(string(k.ClientAuth)); err != nil {
			return fmt.Errorf("key %q: %v", k.Label, err)
		}
		ids[k.ID], labels[k.Label] = true, true
	}
	if c.Default != "" && !labels[c.Default] {
		// A dangling default is harmless: Resolve ignores it.
		c.Default = ""
	}
	return nil
}

// ParseTimeout reads a request timeout ("45s", "2m"): a positive duration.
// name is the setting's name, for the message.
func ParseTimeout(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s = %q is not a positive duration such as \"45s\" or \"2m\"", name, s)
	}
	return d, nil
}

func parseClipboardClear(s string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return defaultClipboardClear, nil
	case "0", "never", "off":
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("clipboard_clear = %q is not a duration such as \"30s\" (or \"never\")", s)
	}
	return d, nil
}

func (c *configFile) settings() Settings {
	st := Settings{Secrets: c.Secrets, ClipboardClear: defaultClipboardClear, AutoRefresh: true}
	if st.Secrets == "" {
		st.Secrets = "auto"
	}
	if d, err := parseClipboardClear(c.ClipboardClear); err == nil {
		st.ClipboardClear = d
	}
	if c.AutoRefresh != nil {
		st.AutoRefresh = *c.AutoRefresh
	}
	if c.Timeout != "" {
		st.Timeout, _ = ParseTimeout("timeout", c.Timeout)
	}
	return st
}

func (c *configFile) byID(id string) (int, bool) {
	for i, k := range c.Keys {
		if k.ID == id {
			return i, true
		}
	}
	return -1, false
}

// saveConfig writes config.toml atomically (caller holds store.lock).
func saveConfig(path string, c *configFile) error {
	var buf bytes.Buffer
	buf.WriteString("# shipkey configuration: no secrets are kept in this file.\n")
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encode %s: %w", displayPath(path), err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

func configPath(dir string) string { return filepath.Join(dir, configFileName) }
