package auth

import (
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// charRef matches one HTML character reference as a browser reads it:
// numeric (decimal or hex, any number of leading zeros, the ";" optional) or
// named (&quot;, &QUOT;, &apos;, &amp …, the ";" optional for the legacy
// names). html.UnescapeString decides what it stands for.
var charRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]*;?)`)
}) // compiled on first use, not at every start

// jsonEscape matches one JSON string escape: a surrogate pair of \u
// escapes, a single \uXXXX (either case of hex), or a one-letter escape.
var jsonEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\["\\/bfnrt]`)
}) // compiled on first use, not at every start

// decodeJSONEscape returns what one jsonEscape match stands for.
func decodeJSONEscape(ref string) string {
	var out string
	if json.Unmarshal([]byte(`"`+ref+`"`), &out) != nil {
		return ref
	}
	return out
}

// redactHTML replaces every run of s that, once its HTML character references
// are decoded, spells one of secrets: `&quot;`, `&#34;`, `&#x22;`, `&#0034;`,
// `&QUOT;` and any mix of them and plain characters, whatever the server's
// escaper chose.
func redactHTML(s string, secrets []string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return redactDecoded(s, secrets, charRef(), html.UnescapeString)
}

// redactJSON does the same for JSON string escapes: `\u0073`, `\u0053`,
// `\"`, `\/` and surrogate pairs, in any mix with plain characters, as a
// server's JSON encoder may write an echoed secret.
func redactJSON(s string, secrets []string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return redactDecoded(s, secrets, jsonEscape(), decodeJSONEscape)
}

// redactDecoded replaces every run of s that, once the escapes ref matches
// are decoded by decode, spells one of secrets. It works on a decoded copy
// that remembers where each decoded byte came from, so no list of encodings
// can miss a form.
func redactDecoded(s string, secrets []string, ref *regexp.Regexp, decode func(string) string) string {
	refs := ref.FindAllStringIndex(s, -1)
	if len(refs) == 0 {
		return s
	}
	// decoded[i] came from s[from[i]:to[i]].
	decoded := make([]byte, 0, len(s))
	from := make([]int32, 0, len(s))
	to := make([]int32, 0, len(s))
	emit := func(b string, start, end int) {
		for i := range len(b) {
			decoded = append(decoded, b[i])
			from = append(from, int32(start))
			to = append(to, int32(end))
		}
	}
	pos := 0
	for _, r := range refs {
		for i := pos; i < r[0]; i++ {
			emit(s[i:i+1], i, i+1)
		}
		emit(decode(s[r[0]:r[1]]), r[0], r[1])
		pos = r[1]
	}
	for i := pos; i < len(s); i++ {
		emit(s[i:i+1], i, i+1)
	}
	d := string(decoded)
	var spans [][2]int
	for _, sec := range secrets {
		if len(sec) < 3 {
			continue
		}
		for off := 0; ; {
			i := strings.Index(d[off:], sec)
			if i < 0 {
				break
			}
			i += off
			spans = append(spans, [2]int{int(from[i]), int(to[i+len(sec)-1])})
			off = i + 1
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		out.WriteString(s[last:start])
		out.WriteString("[redacted]")
		last = end
	}
	out.WriteString(s[last:])
	return out.String()
}
