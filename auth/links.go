package auth

import (
	"net/http"
	"strings"
)

// NextLink is the target of the first link with relation "next" in the
// Link headers (RFC 8288 §3: `<URI>; rel="next"; …, <URI>; rel=last`), ""
// when there is none.
func NextLink(h http.Header) string {
	for _, line := range h.Values("Link") {
		for {
			line = strings.TrimLeft(line, " \t,")
			if !strings.HasPrefix(line, "<") {
				break
			}
			end := strings.IndexByte(line, '>')
			if end < 0 {
				break
			}
			target := line[1:end]
			var params []string
			params, line = linkParams(line[end+1:])
			for _, p := range params {
				name, value, _ := strings.Cut(p, "=")
				if !strings.EqualFold(strings.TrimSpace(name), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(value), `"`)) {
					if strings.EqualFold(rel, "next") {
						return target
					}
				}
			}
		}
	}
	return ""
}

// linkParams splits the parameters of one link (";name=value" up to the
// next comma outside quotes) from the rest of the header.
func linkParams(s string) (params []string, rest string) {
	quoted := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\' && quoted:
			i++
		case c == ';' && !quoted:
			if p := strings.TrimSpace(s[start:i]); p != "" {
				params = append(params, p)
			}
			start = i + 1
		case c == ',' && !quoted:
			if p := strings.TrimSpace(s[start:i]); p != "" {
				params = append(params, p)
			}
			return params, s[i:]
		}
	}
	if p := strings.TrimSpace(s[min(start, len(s)):]); p != "" {
		params = append(params, p)
	}
	return params, ""
}
