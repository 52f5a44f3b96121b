package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/shipkey/shipkey/internal/text"
)

// Kind of a decoded token.
type TokenFormat int

const (
	FormatOpaque TokenFormat = iota // not a JWT: nothing to decode, not an error
	FormatJWT
	// FormatJWE: an encrypted JWT (five base64url parts, a JOSE header with
	// "enc"): only its header can be read; its claims are for its recipient.
	FormatJWE
)

// ClaimKind says how a claim is displayed.
type ClaimKind int

const (
	ClaimText   ClaimKind = iota // strings, numbers, booleans
	ClaimTime                    // exp, iat, nbf, auth_time: absolute plus relative
	ClaimList                    // arrays (aud, roles, allowed-origins)
	ClaimRoles                   // realm_access.roles, resource_access.<client>.roles
	ClaimObject                  // any other nested object, as compact JSON
)

// Claim is one decoded header or payload entry. Name, Display and Items are
// cleaned where the token is decoded: safe to print on a terminal.
type Claim struct {
	Name    text.Clean   // "exp", "realm_access.roles", "resource_access.shipping.roles"
	Kind    ClaimKind    //
	Value   any          // the JSON value as decoded (untrusted, never print it raw)
	Display text.Clean   // humanized: "2026-12-06 10:00:00 UTC (in 14d 23h)"
	Items   []text.Clean // for ClaimList and ClaimRoles: each item
	Time    time.Time    // for ClaimTime
}

// Decoded is a token decoded without trusting it.
type Decoded struct {
	Format  TokenFormat
	Header  []Claim // stable order: alg, typ, kid, then the rest sorted
	Payload []Claim // stable order: well-known claims first (see ClaimOrder), then the rest sorted
	// Convenience fields, sanitized.
	Alg, Kid, Typ   string // header alg and kid; payload typ ("Bearer", "Refresh", "Offline")
	Issuer, Subject string
	Username, Email string
	ExpiresAt       time.Time
	IssuedAt        time.Time
	NotBefore       time.Time
	Scope           string
	RealmRoles      []string
	ClientRoles     map[string][]string
	Raw             map[string]any // decoded payload (untrusted)
	SymmetricSigned bool           // HS* alg: a client can never verify it (Keycloak refresh tokens)
	// BoundJKT and BoundX5T are what the token is bound to (cnf): a DPoP
	// key's thumbprint (RFC 9449 cnf.jkt) or a client certificate's (RFC
	// 8705 cnf.x5t#S256); empty for a bearer token.
	BoundJKT, BoundX5T string
}

// Binding says what a token is bound to and whether that is the key's own:
// jkt and x5t are the key's DPoP key thumbprint and client certificate
// thumbprint ("" when it has none). It is "" for a token bound to nothing.
func (d *Decoded) Binding(jkt, x5t string) string {
	var parts []string
	if d.BoundJKT != "" {
		parts = append(parts, "DPoP key "+d.BoundJKT+matchWord(d.BoundJKT, jkt))
	}
	if d.BoundX5T != "" {
		parts = append(parts, "certificate "+d.BoundX5T+matchWord(d.BoundX5T, x5t))
	}
	return strings.Join(parts, "; ")
}

func matchWord(bound, own string) string {
	switch {
	case own == "":
		return ""
	case bound == own:
		return " (this key's)"
	}
	return " (NOT this key's)"
}

// ClaimOrder is the order of the well-known payload claims in
// Decoded.Payload; claims not listed here follow, sorted by name.
// realm_access and resource_access expand in place into their role entries.
var ClaimOrder = []string{"iss", "sub", "aud", "azp", "typ", "exp", "iat", "nbf", "auth_time", "jti", "sid", "session_state", "acr", "scope", "preferred_username", "email", "email_verified", "name", "given_name", "family_name", "allowed-origins", "realm_access", "resource_access"}

// MaxTokenSize is the largest token Decode and Verify accept.
const MaxTokenSize = 64 << 10

// headerOrder is the order of the well-known JOSE header fields.
var headerOrder = []string{"alg", "typ", "kid"}

// timeClaims are the payload claims shown as times.
var timeClaims = map[string]bool{"exp": true, "iat": true, "nbf": true, "auth_time": true}

// Decode parses token as a JWT (header.payload.signature, base64url JSON) and
// returns its claims humanized against now. A token that is not a JWT is
// returned as FormatOpaque with a nil error; an error means it looked like a
// JWT but its parts do not decode.
//
// Surrounding white space and a leading "Bearer " are ignored; base64 padding
// is tolerated. Tokens over MaxTokenSize are refused with an error. Errors are
// one line and never contain any part of the token. Nothing is verified: see
// Client.Verify.
func Decode(token string, now time.Time) (*Decoded, error) {
	parts, err := splitJWT(token)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		if d := decodeJWE(token); d != nil {
			return d, nil
		}
		return &Decoded{Format: FormatOpaque}, nil
	}
	header, err := decodeSegment(parts[0], "header")
	if err != nil {
		return nil, err
	}
	payload, err := decodeSegment(parts[1], "payload")
	if err != nil {
		return nil, err
	}
	d := &Decoded{Format: FormatJWT, Raw: payload}
	d.Header = headerClaims(header)
	d.Payload = payloadClaims(payload, now)

	d.Alg = textOf(header["alg"])
	d.Kid = textOf(header["kid"])
	d.SymmetricSigned = strings.HasPrefix(strings.ToUpper(d.Alg), "HS")
	d.Typ = textOf(payload["typ"])
	d.Issuer = textOf(payload["iss"])
	d.Subject = textOf(payload["sub"])
	d.Username = textOf(payload["preferred_username"])
	d.Email = textOf(payload["email"])
	d.Scope = textOf(payload["scope"])
	d.ExpiresAt, _ = timeOf(payload["exp"])
	d.IssuedAt, _ = timeOf(payload["iat"])
	d.NotBefore, _ = timeOf(payload["nbf"])
	if cnf, ok := payload["cnf"].(map[string]any); ok {
		d.BoundJKT, d.BoundX5T = textOf(cnf["jkt"]), textOf(cnf["x5t#S256"])
	}
	if ra, ok := payload["realm_access"].(map[string]any); ok {
		if roles, ok := ra["roles"].([]any); ok {
			d.RealmRoles = itemsOf(roles)
		}
	}
	if ra, ok := payload["resource_access"].(map[string]any); ok {
		for client, v := range ra {
			if obj, ok := v.(map[string]any); ok {
				if roles, ok := obj["roles"].([]any); ok {
					if d.ClientRoles == nil {
						d.ClientRoles = make(map[string][]string)
					}
					d.ClientRoles[text.Safe(client)] = itemsOf(roles)
				}
			}
		}
	}
	return d, nil
}

// Claim returns the payload claim named name (as displayed, for example
// "realm_access.roles"), or false.
func (d *Decoded) Claim(name string) (Claim, bool) {
	for _, c := range d.Payload {
		if c.Name.String() == name {
			return c, true
		}
	}
	return Claim{}, false
}

// splitJWT returns the three parts of a compact JWS, or nil when token does
// not have that shape (an opaque token). It fails only for oversized input.
func splitJWT(token string) ([]string, error) {
	if len(token) > MaxTokenSize {
		return nil, fmt.Errorf("decode: the token is too large (%d bytes; the limit is %d KiB)", len(token), MaxTokenSize>>10)
	}
	parts := strings.Split(text.BearerToken(token), ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return nil, nil
	}
	for _, p := range parts {
		if !isBase64URL(p) {
			return nil, nil
		}
	}
	return parts, nil
}

// isBase64URL reports whether s uses only the base64url alphabet, with
// optional trailing '=' padding.
func isBase64URL(s string) bool {
	s = strings.TrimRight(s, "=")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// decodeSegment decodes one base64url JSON object segment. Its errors name
// the part but never quote it.
func decodeSegment(seg, what string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return nil, fmt.Errorf("decode: the token looks like a JWT but its %s is not valid base64url", what)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("decode: the token looks like a JWT but its %s is not a JSON object", what)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decode: the token looks like a JWT but its %s has data after the JSON object", what)
	}
	return m, nil
}

func headerClaims(h map[string]any) []Claim {
	out := make([]Claim, 0, len(h))
	for _, name := range orderedKeys(h, headerOrder) {
		out = append(out, genericClaim(name, h[name]))
	}
	return out
}

func payloadClaims(p map[string]any, now time.Time) []Claim {
	out := make([]Claim, 0, len(p)+2)
	for _, name := range orderedKeys(p, ClaimOrder) {
		v := p[name]
		switch {
		case timeClaims[name]:
			if t, ok := timeOf(v); ok {
				out = append(out, Claim{
					Name:    text.Sanitize(name),
					Kind:    ClaimTime,
					Value:   v,
					Time:    t,
					Display: text.Cleanf("%s (%s)", t.UTC().Format(text.TimeLayout), text.Relative(t, now)),
				})
				continue
			}
		case name == "realm_access":
			if obj, ok := v.(map[string]any); ok {
				out = append(out, accessClaims("realm_access", obj)...)
				continue
			}
		case name == "resource_access":
			if obj, ok := v.(map[string]any); ok {
				for _, client := range orderedKeys(obj, nil) {
					cv := obj[client]
					prefix := "resource_access." + client
					if cobj, ok := cv.(map[string]any); ok {
						out = append(out, accessClaims(prefix, cobj)...)
					} else {
						out = append(out, genericClaim(prefix, cv))
					}
				}
				continue
			}
		}
		out = append(out, genericClaim(name, v))
	}
	return out
}

// accessClaims expands a Keycloak access object ({"roles": [...]}) into a
// ClaimRoles entry named prefix+".roles", and any other member into its own
// entry.
func accessClaims(prefix string, obj map[string]any) []Claim {
	var out []Claim
	for _, k := range orderedKeys(obj, []string{"roles"}) {
		v := obj[k]
		name := prefix + "." + k
		if roles, ok := v.([]any); ok && k == "roles" {
			items := cleanItemsOf(roles)
			out = append(out, Claim{
				Name:    text.Sanitize(name),
				Kind:    ClaimRoles,
				Value:   v,
				Items:   items,
				Display: text.Join(items, text.Trusted(", ")),
			})
			continue
		}
		out = append(out, genericClaim(name, v))
	}
	return out
}

// genericClaim classifies any JSON value: arrays are lists, objects compact
// JSON, everything else text.
func genericClaim(name string, v any) Claim {
	c := Claim{Name: text.Sanitize(name), Value: v}
	switch x := v.(type) {
	case []any:
		c.Kind = ClaimList
		c.Items = cleanItemsOf(x)
		c.Display = text.Join(c.Items, text.Trusted(", "))
	default:
		c.Kind = ClaimText
		if _, ok := v.(map[string]any); ok {
			c.Kind = ClaimObject
		}
		c.Display = cleanOf(v)
	}
	return c
}

// cleanOf renders a scalar JSON value, cleaned; other values as compact JSON.
func cleanOf(v any) text.Clean {
	switch x := v.(type) {
	case nil:
		return text.Clean{}
	case string:
		return text.Sanitize(x)
	case json.Number:
		return text.Sanitize(x.String())
	case bool:
		if x {
			return text.Trusted("true")
		}
		return text.Trusted("false")
	default:
		return text.Sanitize(compactJSON(x))
	}
}

// textOf is cleanOf as a string, for Decoded's convenience fields.
func textOf(v any) string { return cleanOf(v).String() }

func cleanItemsOf(a []any) []text.Clean {
	items := make([]text.Clean, len(a))
	for i, v := range a {
		if v == nil {
			items[i] = text.Trusted("null")
			continue
		}
		items[i] = cleanOf(v)
	}
	return items
}

func itemsOf(a []any) []string {
	items := make([]string, len(a))
	for i, c := range cleanItemsOf(a) {
		items[i] = c.String()
	}
	return items
}

// compactJSON encodes v without HTML escaping; json.Number keeps its literal
// form, so numbers carry no float noise.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "?"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// maxUnix is 9999-12-31T23:59:59Z: later "times" are shown as plain numbers.
const maxUnix = 253402300799

// timeOf reads a NumericDate (seconds since the epoch, possibly fractional).
func timeOf(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	if i, err := n.Int64(); err == nil {
		if i < -maxUnix || i > maxUnix {
			return time.Time{}, false
		}
		return time.Unix(i, 0).UTC(), true
	}
	f, err := n.Float64()
	if err != nil || f < -maxUnix || f > maxUnix || f != f {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), true
}

// orderedKeys returns m's keys: those in first (in that order) when present,
// then the rest sorted.
func orderedKeys(m map[string]any, first []string) []string {
	keys := make([]string, 0, len(m))
	seen := make(map[string]bool, len(first))
	for _, k := range first {
		if _, ok := m[k]; ok && !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	rest := make([]string, 0, len(m)-len(keys))
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// SigState is the outcome of a signature check.
type SigState int

const (
	SigNotChecked SigState = iota // not asked, or cannot be checked (HS*, opaque, no matching connection)
	SigVerified
	SigFailed
)

func (s SigState) String() string {
	return [...]string{"not verified", "verified", "failed"}[s]
}

// Verification is the answer of Client.Verify.
type Verification struct {
	State  SigState
	Reason text.Clean // why not checked, or why it failed
	KeyID  text.Clean
	Issuer text.Clean
	// KeysUnavailable is set when the signature was not checked because no
	// key set could be found or fetched (a key set given by the user may
	// help).
	KeysUnavailable bool
}

// Verify checks token's signature against the JWKS of the connection among
// conns whose issuer equals the token's iss. It never fetches a URL the token
// names: a token from an issuer no connection knows is SigNotChecked with a
// reason. HS-signed tokens (Keycloak refresh tokens) are SigNotChecked: "HMAC-signed
// (HS512): a client cannot check it". Expiry is reported by
// Decode, not here.
func (c *Client) Verify(ctx context.Context, conns []Connection, token string) Verification {
	return c.verify(ctx, conns, token)
}

// FutureSkew is how far iat or nbf may lie ahead of this machine's clock
// before FutureTimes speaks: clocks always differ a little.
const FutureSkew = time.Minute

// FutureTime is a time claim that lies in the future.
type FutureTime struct {
	Claim string        // "iat" or "nbf"
	By    time.Duration // how far ahead of now
}

// Warning is the one line that says so, and what it means.
func (f FutureTime) Warning() string {
	by := text.Span(f.By)
	if f.Claim == "nbf" {
		return "nbf lies " + by + " in the future: the server will refuse the token until then (or a clock is off)"
	}
	return "iat lies " + by + " in the future: the server's clock or this machine's is off"
}

// FutureTimes reports the iat and nbf claims that lie more than FutureSkew
// after now (a server with a skewed clock, or a token not valid yet).
func (d *Decoded) FutureTimes(now time.Time) []FutureTime {
	var out []FutureTime
	for _, c := range []struct {
		name string
		at   time.Time
	}{{"iat", d.IssuedAt}, {"nbf", d.NotBefore}} {
		if !c.at.IsZero() && c.at.Sub(now) > FutureSkew {
			out = append(out, FutureTime{Claim: c.name, By: c.at.Sub(now).Round(time.Second)})
		}
	}
	return out
}

// decodeJWE returns the header of token when it is a JWE in compact form
// (RFC 7516: five base64url parts, a JSON header naming "enc"), else nil.
func decodeJWE(token string) *Decoded {
	parts := strings.Split(text.BearerToken(token), ".")
	if len(parts) != 5 || parts[0] == "" {
		return nil
	}
	for _, p := range parts {
		if !isBase64URL(p) {
			return nil
		}
	}
	header, err := decodeSegment(parts[0], "header")
	if err != nil || textOf(header["enc"]) == "" {
		return nil
	}
	return &Decoded{Format: FormatJWE, Header: headerClaims(header), Alg: textOf(header["alg"]), Kid: textOf(header["kid"])}
}
