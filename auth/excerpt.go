package auth

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// bodyExcerpt is what an error shows of an unexpected answer: for markup (an
// HTML error page) the status line's companion, its first line of text —
// never a tag, a script or a style sheet; for anything else the body itself.
// Either way secrets are redacted and it is short (scrub).
func bodyExcerpt(body []byte, secrets []string) string {
	if isMarkup(body) {
		return scrub(firstTextLine(body), secrets)
	}
	return scrub(string(body), secrets)
}

// isMarkup reports whether body is an HTML or XML document (it starts
// with "<"), not JSON or text.
func isMarkup(body []byte) bool {
	t := bytes.TrimSpace(body)
	return len(t) > 0 && t[0] == '<'
}

// firstTextLine is the first non-blank line of the text of an HTML or XML
// document, with its character references decoded and runs of blanks made
// one space; the text inside script, style, noscript and template elements
// is not text a person reads there and is skipped.
func firstTextLine(doc []byte) string {
	z := html.NewTokenizer(bytes.NewReader(doc))
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); hiddenText(string(name)) {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); hiddenText(string(name)) && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			for line := range strings.Lines(string(z.Text())) {
				if f := strings.Fields(line); len(f) > 0 {
					return strings.Join(f, " ")
				}
			}
		}
	}
}

func hiddenText(tag string) bool {
	switch tag {
	case "script", "style", "noscript", "template":
		return true
	}
	return false
}
