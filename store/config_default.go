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
	line = bytes.TrimSuffix(line, []byte("\n"))
	var p unstable.Parser
	p.Reset(data)
	found := false
	var at unstable.Range
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind == unstable.Table || e.Kind == unstable.ArrayTable {
			break // the top-level values end here
		}
		if e.Kind != unstable.KeyValue {
			continue
		}
		k := e.Key()
		if !k.Next() || !strings.EqualFold(string(k.Node().Data), "default") || !k.IsLast() {
			continue
		}
		if found || e.Value().Kind != unstable.String {
			return false, nil
		}
		found, at = true, e.Raw
	}
	if p.Error() != nil {
		return false, nil
	}
	var out []byte
	if found {
		out = make([]byte, 0, len(data)+len(line))
		out = append(out, data[:at.Offset]...)
		out = append(out, line...)
		out = append(out, data[at.Offset+at.Length:]...)
	} else {
		// After the comments that open the file: still among the
		// top-level values, which come before every table.
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
		if i == len(data) && len(data) > 0 && data[len(data)-1] != '\n' {
			return false, nil
		}
		out = make([]byte, 0, len(data)+len(line)+1)
		out = append(out, data[:i]...)
		out = append(out, line...)
		out = append(out, '\n')
		out = append(out, data[i:]...)
	}
	teams = bytes.Clone(teams)
	if err := writeFileAtomic(path, out); err != nil {
		return true, err
	}
	fp, err := configFingerprint(path)
	if err != nil {
		return true, err
	}
	meta, err := t.btx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return true, err
	}
	for k, v := range map[string][]byte{string(metaDefault): []byte(label), string(metaConfig): []byte(fp), string(metaTeams): append([]byte(fp+"\n"), teams...)} {
		if err := meta.Put([]byte(k), v); err != nil {
			return true, err
		}
	}
	return true, nil
}
