package auth

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// TestRedactHTMLEntityForms: a secret holding `"` and `'`, echoed by an HTML
// page in any character-reference form, never survives redaction.
func TestRedactHTMLEntityForms(t *testing.T) {
	t.Parallel()
	const secret = `cs"qu'ote&x`
	forms := map[string]string{
		"&quot;":               `cs&quot;qu&#39;ote&amp;x`,
		"&QUOT; and &apos;":    `cs&QUOT;qu&apos;ote&AMP;x`,
		"&#34;":                `cs&#34;qu&#39;ote&#38;x`,
		"&#x22;":               `cs&#x22;qu&#x27;ote&#x26;x`,
		"&#X22; upper":         `cs&#X22;qu&#X27;ote&#X26;x`,
		"leading zeros":        `cs&#0034;qu&#x0027;ote&#00038;x`,
		"no semicolons":        `cs&quotqu&#39ote&ampx`,
		"every character":      allRefs(secret),
		"mixed named/numeric":  `&#99;s&quot;q&#x75;'ote&amp;x`,
		"html.EscapeString":    html.EscapeString(secret),
		"named for the letter": `&#x63;&#x73;&quot;qu'ote&amp;x`,
	}
	for name, form := range forms {
		if got := html.UnescapeString(form); got != secret {
			t.Fatalf("%s: the form decodes to %q, not the secret", name, got)
		}
		body := "<p>You sent client_secret=" + form + " and more</p>"
		out := redact(body, []string{secret})
		if strings.Contains(out, form) || strings.Contains(html.UnescapeString(out), secret) {
			t.Errorf("%s: not redacted: %s", name, out)
		}
		if !strings.Contains(out, "You sent client_secret=[redacted] and more") {
			t.Errorf("%s: the text around it changed: %s", name, out)
		}
	}
}

func allRefs(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i%2 == 0 {
			fmt.Fprintf(&b, "&#%d;", r)
		} else {
			fmt.Fprintf(&b, "&#x%X;", r)
		}
	}
	return b.String()
}

// FuzzRedact: whatever the secret and whichever character-reference form each
// of its characters takes, the redacted text does not spell it, raw or
// decoded.
func FuzzRedact(f *testing.F) {
	f.Add(`pa"ss`, []byte{0, 1, 2, 3, 4})
	f.Add(`a<b>'c"d`, []byte{5, 6, 7})
	f.Add("sécret✓", []byte{1, 2})
	f.Fuzz(func(t *testing.T, secret string, forms []byte) {
		if len(secret) < 3 || strings.ContainsAny(secret, "[]&;#") || !utf8.ValidString(secret) || strings.ContainsRune(secret, 0) {
			t.Skip("not a secret this property covers: shorter than 3 bytes, not UTF-8, or with NUL or one of [ ] & ; # (the reference syntax itself)")
		}
		var enc strings.Builder
		for i, r := range secret {
			form := byte(0)
			if len(forms) > 0 {
				form = forms[i%len(forms)] % 5
			}
			switch form {
			case 0:
				enc.WriteRune(r)
			case 1:
				fmt.Fprintf(&enc, "&#%d;", r)
			case 2:
				fmt.Fprintf(&enc, "&#x%x;", r)
			case 3:
				fmt.Fprintf(&enc, "&#X%04X", r) // no ";"
				if next := i + len(string(r)); next < len(secret) && isHexDigit(secret[next]) {
					enc.WriteByte(';')
				}
			case 4:
				enc.WriteString(html.EscapeString(string(r)))
			}
		}
		body := "<p>x=" + enc.String() + " y</p>"
		out := redact(body, []string{secret})
		if strings.Contains(out, secret) || strings.Contains(html.UnescapeString(out), secret) {
			t.Fatalf("secret %q survives in %q (from %q)", secret, out, body)
		}
	})
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// TestRedactJSONUnicodeEscapes: a secret a server echoes inside a JSON
// string with some or all characters written as \uXXXX (either hex case,
// surrogate pairs for characters outside the BMP) or as \" \/ never survives
// redaction, and the text around it stays.
func TestRedactJSONUnicodeEscapes(t *testing.T) {
	t.Parallel()
	const secret = `s3cr"et/𝄞x`
	every := func(upper bool) string {
		var b strings.Builder
		for _, r := range secret {
			for _, u := range utf16.Encode([]rune{r}) {
				if upper {
					fmt.Fprintf(&b, `\u%04X`, u)
				} else {
					fmt.Fprintf(&b, `\u%04x`, u)
				}
			}
		}
		return b.String()
	}
	forms := map[string]string{
		"every character, lower hex": every(false),
		"every character, upper hex": every(true),
		"some characters":            `\u0073\u0033cr\"et\/\ud834\udd1ex`,
		"quote as \\u0022":           `s3cr\u0022et/\uD834\uDD1Ex`,
	}
	for name, form := range forms {
		var decoded string
		if err := json.Unmarshal([]byte(`"`+form+`"`), &decoded); err != nil || decoded != secret {
			t.Fatalf("%s: the form decodes to %q (%v), not the secret", name, decoded, err)
		}
		body := `{"error":"invalid_client","error_description":"bad secret ` + form + ` given"}`
		out := scrub(body, []string{secret})
		if strings.Contains(out, form) || strings.Contains(out, `\u0073\u0033`) {
			t.Errorf("%s: not redacted: %s", name, out)
		}
		if !strings.Contains(out, "bad secret [redacted] given") {
			t.Errorf("%s: the text around it changed: %s", name, out)
		}
	}
}
