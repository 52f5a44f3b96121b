package store

import (
	"bytes"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// setDefaultInPlace makes label the default key by changing config.toml's
// top-level default line only (or adding one), as a person would edit it,
// and records it in the index: `shipkey keys default` reads the file and
// parses its top-level values, not its [[keys]] tables, so that it costs
// the same at 100,000 keys as at one (parsing and writing them all took
// 2 s). done is false when the file is not one it can edit so (a value it
// cannot parse, two default lines, no index of it): the caller then
// parses and writes config.toml whole.
func (t *tx) setDefaultInPlace(label string) (done bool, err error) {
	path := t.s.configPath()
	fpBefore := string(t.meta(metaConfig))
	_, teams, ok := bytes.Cut(t.meta(metaTeams), []byte("\n"))
	if !ok || fpBefore == "" || fpBefore == fpAbsent {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, nil
	}
	if fp, err := configFingerprint(path); err != nil || fp != fpBefore {
		return false, nil // changed since the index was checked
	}
	line, err := toml.Marshal(struct {
		Default string `toml:"default"`
	}{label})
	if err != nil {
		return false, nil
	}
	out, ok := withDefaultLine(data, bytes.TrimSuffix(line, []byte("\n")))
	if !ok {
		return false, nil
	}
	teams = bytes.Clone(teams)
	if err := writeFileAtomic(path, out); err != nil {
		return true, err
	}
	return true, t.recordDefault(path, label, teams)
}

// withDefaultLine is config.toml (data) with its top-level default line
// replaced by line, or line added after the comments that open the file;
// false when the file is not one to edit so.
func withDefaultLine(data, line []byte) ([]byte, bool) {
	at, found, ok := defaultLine(data)
	if !ok {
		return nil, false
	}
	if found {
		out := make([]byte, 0, len(data)+len(line))
		out = append(out, data[:at.Offset]...)
		out = append(out, line...)
		return append(out, data[at.Offset+at.Length:]...), true
	}
	// After the comments that open the file: still among the top-level
	// values, which come before every table.
	i := afterOpeningComments(data)
	if i == len(data) && len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, false
	}
	out := make([]byte, 0, len(data)+len(line)+1)
	out = append(out, data[:i]...)
	out = append(out, line...)
	out = append(out, '\n')
	return append(out, data[i:]...), true
}

// defaultLine finds config.toml's top-level default line, parsing the
// top-level values only (the [[keys]] tables come after). ok is false when
// the file does not parse or has two default lines, or one that is not a
// string.
func defaultLine(data []byte) (at unstable.Range, found, ok bool) {
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable {
			break // the top-level values end here
		}
		if e.Kind != unstable.KeyValue || !isDefaultKey(e.Key()) {
			continue
		}
		if found || e.Value().Kind != unstable.String {
			return unstable.Range{}, false, false
		}
		found, at = true, e.Raw
	}
	return at, found, p.Error() == nil
}

// isDefaultKey reports whether k is the key default (one part, any case).
func isDefaultKey(k unstable.Iterator) bool {
	return k.Next() && strings.EqualFold(string(k.Node().Data), "default") && k.IsLast()
}

// afterOpeningComments is the offset of the first line of data that is
// neither blank nor a comment (len(data) when every whole line is; a last
// line without a newline is not looked at).
func afterOpeningComments(data []byte) int {
	i := 0
	for i < len(data) {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			break
		}
		if l := bytes.TrimSpace(data[i : i+end]); len(l) > 0 && l[0] != '#' {
			break
		}
		i += end + 1
	}
	return i
}

// recordDefault records in the index that label is the default key and
// config.toml at path is as just written (its fingerprint, with the teams
// recorded before).
func (t *tx) recordDefault(path, label string, teams []byte) error {
	fp, err := configFingerprint(path)
	if err != nil {
		return err
	}
	meta, err := t.btx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	for k, v := range map[string][]byte{string(metaDefault): []byte(label), string(metaConfig): []byte(fp), string(metaTeams): append([]byte(fp+"\n"), teams...)} {
		if err := meta.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}
