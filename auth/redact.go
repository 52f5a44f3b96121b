package auth

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/shipkey/shipkey/internal/text"
)

// excerptSize bounds Excerpt and Description.
const excerptSize = 200

// tokenLike matches runs that could be a token or another secret: long
// base64/base64url/JWT-alphabet strings.
var tokenLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9._~+=-]{32,}`) }) // compiled on first use, not at every start

// secretsOf lists what must never appear in an *Error for a request made with
// conn and clientSecret: the client secret, the other secrets given
// (password, tokens, username), and the HTTP Basic credentials x/oauth2 and
// postForm send for the client (base64 of id:secret, raw and form-encoded).
func secretsOf(conn Connection, clientSecret string, others ...string) []string {
	out := append([]string{clientSecret}, others...)
	if clientSecret != "" {
		for _, pair := range []string{
			conn.ClientID + ":" + clientSecret,
			url.QueryEscape(conn.ClientID) + ":" + url.QueryEscape(clientSecret),
		} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				out = append(out, enc.EncodeToString([]byte(pair)))
			}
		}
	}
	return out
}

// encodings lists the forms secret can take in a body that echoes a request:
// verbatim; form and URL encoding (QueryEscape with "+" or "%20" for a space,
// PathEscape, lower-case hex); HTML escaping (html.EscapeString, decimal and
// hex numeric character references for the escaped characters or for every
// character); JSON string escaping (with and without Go's \u0026-style HTML
// escapes, and with "\/"). Longest first, so that no shorter form leaves part
// of a longer one behind.
func encodings(secret string) []string {
	set := map[string]bool{secret: true}
	add := func(s string) { set[s] = true }

	q := url.QueryEscape(secret)
	add(q)
	add(strings.ReplaceAll(q, "+", "%20"))
	add(url.PathEscape(secret))
	add(lowerHex(q))
	add(lowerHex(url.PathEscape(secret)))

	add(html.EscapeString(secret))
	var dec, hex, allDec, allHex strings.Builder
	for _, r := range secret {
		switch r {
		case '&', '<', '>', '"', '\'':
			fmt.Fprintf(&dec, "&#%d;", r)
			fmt.Fprintf(&hex, "&#x%x;", r)
		default:
			dec.WriteRune(r)
			hex.WriteRune(r)
		}
		fmt.Fprintf(&allDec, "&#%d;", r)
		fmt.Fprintf(&allHex, "&#x%x;", r)
	}
	add(dec.String())
	add(hex.String())
	add(upperHexRefs(hex.String()))
	add(allDec.String())
	add(allHex.String())
	add(upperHexRefs(allHex.String()))

	for _, escapeHTML := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(secret) == nil {
			s := strings.TrimSuffix(b.String(), "\n")
			s = s[1 : len(s)-1]
			add(s)
			add(strings.ReplaceAll(s, "/", `\/`))
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return out
}

// upperHexRefs turns the hex digits of "&#x..;" references to upper case.
func upperHexRefs(s string) string {
	b := []byte(s)
	in := false
	for i := range b {
		switch {
		case i >= 2 && b[i-2] == '&' && b[i-1] == '#' && b[i] == 'x':
			in = true
		case b[i] == ';':
			in = false
		case in && 'a' <= b[i] && b[i] <= 'f':
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// lowerHex turns the hex digits of percent-escapes to lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lower(b[i+1])
			b[i+2] = lower(b[i+2])
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// redact replaces every encoding of every secret (of 3 bytes or more) in s,
// every HTML character-reference form (redactHTML) and every JSON \u-escape
// form (redactJSON) included.
func redact(s string, secrets []string) string {
	var all []string
	for _, sec := range secrets {
		if len(sec) >= 3 {
			all = append(all, encodings(sec)...)
		}
	}
	slices.SortFunc(all, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, v := range all {
		if len(v) >= 3 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return redactJSON(redactHTML(s, secrets), secrets)
}

// scrub prepares server-provided text for an *Error: every encoding of every
// known secret and every token-looking run is replaced, then it is cut to
// excerptSize bytes (on a rune boundary) and sanitized for the terminal.
func scrub(s string, secrets []string) string {
	s = redact(s, secrets)
	s = tokenLike().ReplaceAllString(s, "[redacted]")
	s = strings.TrimSpace(s)
	if len(s) > excerptSize {
		cut := excerptSize
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return text.Safe(s)
}
