package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
)

// Output formats of "shipkey token" (--output).
const (
	outputText           = "text"            // the token and a newline
	outputJSON           = "json"            // tokenDoc
	outputExecCredential = "exec-credential" // a Kubernetes ExecCredential
)

var tokenOutputs = []string{outputText, outputJSON, outputExecCredential}

// tokenDoc is what "token --json" prints and what "serve" answers: the token
// with what a caller needs to cache it.
type tokenDoc struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	// ExpiresAt is the access token's expiry (RFC 3339, UTC); omitted when
	// the server stated none and the token carries no exp.
	ExpiresAt string `json:"expires_at,omitempty"`
	// Key is the key's label; omitted for a token of no key (--no-store).
	Key   string `json:"key,omitempty"`
	Scope string `json:"scope"`
	// JKT is the thumbprint of the key's DPoP key, which a DPoP-bound
	// token's cnf.jkt names (RFC 9449); omitted for a key without one.
	JKT string `json:"jkt,omitempty"`
	// Audience and Resource are what a token exchange (--audience,
	// --resource) asked the token for: it is not the key's own token.
	// Omitted for the key's own.
	Audience string `json:"audience,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// exchanged names in d what the exchange x asked the token for.
func (d tokenDoc) exchanged(x auth.Exchange) tokenDoc {
	d.Audience, d.Resource = x.Audience, x.Resource
	return d
}

func newTokenDoc(label string, ts *auth.TokenSet) tokenDoc {
	d := tokenDoc{
		AccessToken: ts.AccessToken,
		TokenType:   ts.TokenType,
		Key:         label,
		Scope:       ts.Scope,
	}
	if d.TokenType == "" || strings.EqualFold(d.TokenType, "bearer") {
		d.TokenType = "Bearer"
	}
	if exp := rfc3339OrNil(ts.AccessExpiry()); exp != nil {
		d.ExpiresAt = *exp
	}
	return d
}

// execCredential is a client.authentication.k8s.io/v1 ExecCredential, as a
// kubectl exec credential plugin prints it.
type execCredential struct {
	APIVersion string               `json:"apiVersion"`
	Kind       string               `json:"kind"`
	Status     execCredentialStatus `json:"status"`
}

type execCredentialStatus struct {
	Token               string `json:"token"`
	ExpirationTimestamp string `json:"expirationTimestamp,omitempty"`
}

func newExecCredential(ts *auth.TokenSet) execCredential {
	c := execCredential{
		APIVersion: "client.authentication.k8s.io/v1",
		Kind:       "ExecCredential",
		Status:     execCredentialStatus{Token: ts.AccessToken},
	}
	if exp := rfc3339OrNil(ts.AccessExpiry()); exp != nil {
		c.Status.ExpirationTimestamp = *exp
	}
	return c
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeToken prints ts in the chosen format.
// jkt is the key's DPoP key thumbprint ("" for none); x the token exchange
// that gave ts (zero: the key's own token).
func writeToken(w io.Writer, format, label, jkt string, x auth.Exchange, ts *auth.TokenSet) error {
	switch format {
	case outputJSON:
		d := newTokenDoc(label, ts).exchanged(x)
		d.JKT = jkt
		return writeJSON(w, d)
	case outputExecCredential:
		return writeJSON(w, newExecCredential(ts))
	default:
		_, err := fmt.Fprintln(w, ts.AccessToken)
		return err
	}
}

// curlConfigHeader is the line of a curl config file (curl -K) that sends
// ts as the Authorization header. Inside double quotes curl's config syntax
// knows the escapes \\ \" \t \n \r \v; any other control character cannot be
// carried and is an error (no real token holds one).
func curlConfigHeader(ts *auth.TokenSet) (string, error) {
	return curlConfigLine("Authorization: " + ts.Header())
}

// curlConfigLine is the curl config line that sends header ("Name: value").
func curlConfigLine(header string) (string, error) {
	var b strings.Builder
	b.WriteString(`header = "`)
	for _, r := range header {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\v':
			b.WriteString(`\v`)
		default:
			if r < 0x20 || r == 0x7f {
				return "", fmt.Errorf("the header holds a control character (U+%04X) that a curl config cannot carry; log in again: shipkey login", r)
			}
			b.WriteRune(r)
		}
	}
	b.WriteString("\"\n")
	return b.String(), nil
}

// dpopHeaderError refuses a bare header for a DPoP-bound key: its token is
// useless without a proof signed for each request.
func dpopHeaderError(label string) error {
	return text.Errorf("API key %s holds DPoP-bound tokens, which need a proof signed for each request: a bare Authorization header would be refused; print both headers for one request with `shipkey header %s --dpop-proof METHOD URL`, or let `shipkey api %s URL` sign a proof for each request", label, text.ShellQuote(label), text.ShellQuote(label))
}
