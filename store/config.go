package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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

	// extra holds the top-level fields this version does not know (a newer
	// shipkey's, a person's), keyExtra those of each [[keys]] table by the
	// key's id: written back as they were read (never in the index).
	extra    map[string]any
	keyExtra map[string]map[string]any
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
	return text.Errorf("%s: %s; fix or move it away", where, what)
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
	// Strict first: a config.toml with no field this version does not know
	// (the usual one) is parsed once. One with such fields is parsed again,
	// into maps, to keep them.
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&c)
	var sme *toml.StrictMissingError
	unknown := errors.As(err, &sme)
	if unknown {
		c = configFile{}
		err = toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	}
	if err != nil {
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
	if !unknown {
		return &c, nil
	}
	// What the struct has no field for, kept to be written back.
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err == nil {
		c.extra = unknownFields(raw, knownFields(reflect.TypeFor[configFile]()))
		if tables, ok := raw["keys"].([]any); ok && len(tables) == len(c.Keys) {
			known := knownFields(reflect.TypeFor[keyEntry]())
			for i, t := range tables {
				if m, ok := t.(map[string]any); ok {
					if extra := unknownFields(m, known); extra != nil {
						if c.keyExtra == nil {
							c.keyExtra = map[string]map[string]any{}
						}
						c.keyExtra[c.Keys[i].ID] = extra
					}
				}
			}
		}
	}
	return &c, nil
}

// knownFields is the field names of t (a struct, by its toml tags and its
// embedded structs), lower case.
func knownFields(t reflect.Type) map[string]bool {
	known := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case name == "":
				known[strings.ToLower(f.Name)] = true
			default:
				known[strings.ToLower(name)] = true
			}
		}
	}
	walk(t)
	return known
}

// unknownFields is what of table has no field among known (knownFields;
// names compared as the decoder does, ignoring case); nil when it is all
// known.
func unknownFields(table map[string]any, known map[string]bool) map[string]any {
	var out map[string]any
	for k, v := range table {
		if !known[strings.ToLower(k)] {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = v
		}
	}
	return out
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
	var body bytes.Buffer
	enc := toml.NewEncoder(&body)
	enc.SetIndentTables(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encode %s: %w", displayPath(path), err)
	}
	out, err := withUnknownFields(body.String(), c)
	if err != nil {
		return fmt.Errorf("encode %s: %w", displayPath(path), err)
	}
	buf.WriteString(out)
	return writeFileAtomic(path, buf.Bytes())
}

// withUnknownFields puts the fields parseConfig did not know back into
// body, c's encoding: the top-level ones before the first table, each key's
// at the top of its [[keys]] table; tables among them written inline.
func withUnknownFields(body string, c *configFile) (string, error) {
	lines := func(m map[string]any) (string, error) {
		if len(m) == 0 {
			return "", nil
		}
		var b bytes.Buffer
		enc := toml.NewEncoder(&b)
		enc.SetTablesInline(true)
		err := enc.Encode(m)
		return b.String(), err
	}
	top, err := lines(c.extra)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString(top)
	i := 0
	for line := range strings.SplitAfterSeq(body, "\n") {
		out.WriteString(line)
		if line == "[[keys]]\n" && i < len(c.Keys) {
			more, err := lines(c.keyExtra[c.Keys[i].ID])
			if err != nil {
				return "", err
			}
			out.WriteString(more)
			i++
		}
	}
	return out.String(), nil
}

func configPath(dir string) string { return filepath.Join(dir, configFileName) }
