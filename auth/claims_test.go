package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

// claimsNow is the fixed clock of the claims and verify tests.
var claimsNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// demoRealm starts authtest's demo realm on a fixed clock (claimsNow) and
// logs in as the demo user with a new client whose clock is clientNow (nil:
// claimsNow). It returns the server, client, connection and token set.
func demoRealm(t *testing.T, clientNow func() time.Time) (*authtest.Server, *auth.Client, auth.Connection, *auth.TokenSet) {
	t.Helper()
	cfg := authtest.DemoConfig()
	cfg.Now = func() time.Time { return claimsNow }
	srv := authtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	if clientNow == nil {
		clientNow = func() time.Time { return claimsNow }
	}
	c, err := auth.NewClient(auth.Options{Now: clientNow, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	conn := auth.Connection{AuthURL: srv.URL(), Realm: srv.Realm(), ClientID: authtest.DemoClientID}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := c.Login(ctx, conn, auth.ClientAuth{Secret: authtest.DemoClientSecret}, authtest.DemoUsername, authtest.DemoPassword)
	if err != nil {
		t.Fatalf("login to the demo realm: %v", err)
	}
	return srv, c, conn, ts
}

// rawJWT builds header.payload.signature from JSON texts, unsigned.
func rawJWT(header, payload, sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(payload)) + "." + enc([]byte(sig))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func claimNames(cs []auth.Claim) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name.String()
	}
	return names
}

func TestDecodeKeycloakAccessToken(t *testing.T) {
	t.Parallel()
	srv, _, _, ts := demoRealm(t, nil)
	d, err := auth.Decode(ts.AccessToken, claimsNow)
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != auth.FormatJWT || d.Alg != "RS256" || d.Kid == "" || d.SymmetricSigned {
		t.Errorf("format %v alg %q kid %q symmetric %v; want JWT RS256 with a kid, asymmetric", d.Format, d.Alg, d.Kid, d.SymmetricSigned)
	}
	if d.Typ != "Bearer" || d.Issuer != srv.Issuer() || d.Subject == "" {
		t.Errorf("typ %q iss %q sub %q", d.Typ, d.Issuer, d.Subject)
	}
	if d.Username != authtest.DemoUsername || d.Email != "demo@example.com" || d.Scope != "email profile write" {
		t.Errorf("username %q email %q scope %q", d.Username, d.Email, d.Scope)
	}
	wantExp := claimsNow.Add(1314000 * time.Second)
	if !d.ExpiresAt.Equal(wantExp) || !d.IssuedAt.Equal(claimsNow) {
		t.Errorf("exp %v iat %v; want %v and %v", d.ExpiresAt, d.IssuedAt, wantExp, claimsNow)
	}
	if !slices.Equal(d.RealmRoles, []string{"offline_access", "uma_authorization", "shipper"}) {
		t.Errorf("realm roles %q", d.RealmRoles)
	}
	if !slices.Equal(d.ClientRoles[authtest.DemoClientID], []string{"write", "read"}) || d.ClientRoles["account"] == nil {
		t.Errorf("client roles %v", d.ClientRoles)
	}
	if d.Raw["azp"] != authtest.DemoClientID {
		t.Errorf("raw azp = %v", d.Raw["azp"])
	}

	exp, ok := d.Claim("exp")
	if !ok || exp.Kind != auth.ClaimTime || exp.Display.String() != "2026-12-06 15:00:00 UTC (in 15d 5h)" {
		t.Errorf("exp claim = %+v", exp)
	}
	iat, _ := d.Claim("iat")
	if iat.Display.String() != "2026-11-21 10:00:00 UTC (now)" {
		t.Errorf("iat display = %q", iat.Display)
	}
	roles, ok := d.Claim("realm_access.roles")
	if !ok || roles.Kind != auth.ClaimRoles || roles.Display.String() != "offline_access, uma_authorization, shipper" {
		t.Errorf("realm roles claim = %+v", roles)
	}
	cr, ok := d.Claim("resource_access." + authtest.DemoClientID + ".roles")
	if !ok || cr.Kind != auth.ClaimRoles || !slices.Equal(cr.Items, text.SanitizeAll([]string{"write", "read"})) {
		t.Errorf("client roles claim = %+v", cr)
	}
	if _, ok := d.Claim("realm_access"); ok {
		t.Error("realm_access should be expanded into realm_access.roles, not shown as an object")
	}
	origins, _ := d.Claim("allowed-origins")
	if origins.Kind != auth.ClaimList || !slices.Equal(origins.Items, text.SanitizeAll([]string{"/*"})) {
		t.Errorf("allowed-origins = %+v", origins)
	}

	// Well-known order: every name that is in ClaimOrder appears in that
	// order, before any name that is not.
	names := claimNames(d.Payload)
	last := -1
	for i, n := range names {
		base, _, _ := strings.Cut(n, ".")
		idx := slices.Index(auth.ClaimOrder, base)
		if idx < 0 {
			t.Errorf("claim %q is not well known; the demo token has only well-known claims: %q", n, names)
			continue
		}
		if idx < last {
			t.Errorf("claim %q at %d is out of ClaimOrder: %q", n, i, names)
		}
		last = idx
	}
	if names[0] != "iss" || names[1] != "sub" {
		t.Errorf("payload order starts %q, want iss, sub", names[:2])
	}
	if got := claimNames(d.Header); !slices.Equal(got[:3], []string{"alg", "typ", "kid"}) {
		t.Errorf("header order = %q, want alg, typ, kid first", got)
	}
}

func TestDecodeKeycloakRefreshToken(t *testing.T) {
	t.Parallel()
	_, _, _, ts := demoRealm(t, nil)
	d, err := auth.Decode(ts.RefreshToken, claimsNow)
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != auth.FormatJWT || d.Alg != "HS512" || !d.SymmetricSigned || d.Typ != "Refresh" {
		t.Errorf("refresh token: format %v alg %q symmetric %v typ %q", d.Format, d.Alg, d.SymmetricSigned, d.Typ)
	}
	exp, ok := d.Claim("exp")
	if !ok || exp.Display.String() != "2026-11-21 10:30:00 UTC (in 30m)" {
		t.Errorf("refresh exp = %+v", exp)
	}
}

func TestDecodeShapes(t *testing.T) {
	t.Parallel()
	now := claimsNow
	good := rawJWT(`{"alg":"RS256","typ":"JWT"}`, `{"sub":"x"}`, "sig")
	padded := func() string {
		p := strings.Split(good, ".")
		h := base64.URLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"k1"}`))
		if !strings.HasSuffix(h, "=") {
			t.Fatal("test header must need padding")
		}
		return h + "." + p[1] + "." + p[2]
	}()
	huge := rawJWT(`{"alg":"RS256"}`, `{"x":"`+strings.Repeat("a", auth.MaxTokenSize)+`"}`, "sig")
	tests := []struct {
		name    string
		token   string
		format  auth.TokenFormat
		wantErr string // substring of the error; empty for none
	}{
		{"jwt", good, auth.FormatJWT, ""},
		{"bearer prefix and newline", "Bearer " + good + "\n", auth.FormatJWT, ""},
		{"padded base64", padded, auth.FormatJWT, ""},
		{"unsigned, empty signature", strings.TrimSuffix(good, "c2ln"), auth.FormatJWT, ""},
		{"opaque", "abc", auth.FormatOpaque, ""},
		{"empty", "", auth.FormatOpaque, ""},
		{"uuid refresh token", "d46dc821-25ba-43cc-8b31-421602fde0d2", auth.FormatOpaque, ""},
		{"two parts", "abc.def", auth.FormatOpaque, ""},
		{"JWE five parts", "a.b.c.d.e", auth.FormatOpaque, ""},
		{"not base64url", "ab+c.de/f.ghi", auth.FormatOpaque, ""},
		{"empty header", ".e30.sig", auth.FormatOpaque, ""},
		{"garbage three parts", "Zm9v.YmFy.YmF6", 0, "header is not a JSON object"},
		{"bad base64 length", "a.eyJ9.c", 0, "header is not valid base64url"},
		{"payload not JSON", base64.RawURLEncoding.EncodeToString([]byte(`{}`)) + ".bm90LWpzb24.sig", 0, "payload is not a JSON object"},
		{"payload JSON array", rawJWT(`{}`, `[1,2]`, "s"), 0, "payload is not a JSON object"},
		{"trailing data", rawJWT(`{}`, `{"a":1} {"b":2}`, "s"), 0, "data after the JSON object"},
		{"huge", huge, 0, "too large"},
		{"huge opaque", strings.Repeat("x", auth.MaxTokenSize+1), 0, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := auth.Decode(tt.token, now)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Decode: no error, want %q", tt.wantErr)
				}
				msg := err.Error()
				if !strings.Contains(msg, tt.wantErr) || strings.ContainsAny(msg, "\n\r") {
					t.Errorf("error %q: want one line containing %q", msg, tt.wantErr)
				}
				for _, part := range strings.Split(tt.token, ".") {
					if len(part) >= 4 && strings.Contains(msg, part) {
						t.Errorf("error %q quotes a part of the token", msg)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if d.Format != tt.format {
				t.Errorf("format = %v, want %v", d.Format, tt.format)
			}
			if tt.format == auth.FormatOpaque && (d.Header != nil || d.Payload != nil || d.Raw != nil) {
				t.Errorf("opaque token has claims: %+v", d)
			}
		})
	}
}

func TestDecodeStableOrderAndValues(t *testing.T) {
	t.Parallel()
	header := `{"zz":1,"kid":"k1","cty":"JWT","typ":"JWT","alg":"ES256"}`
	payload := `{
		"zeta": "last", "custom": {"b": 1, "a": [1, "x", null, 1.50]}, "alpha": true,
		"exp": 1795305600, "nbf": "soon", "auth_time": 1795305600.5,
		"aud": ["shipping", "account"], "iss": "https://auth.example.com/auth/realms/master",
		"big": 12345678901234567890, "f": 0.1, "n": 1314000, "nothing": null,
		"resource_access": {"zclient": {"roles": ["z"]}, "aclient": {"roles": ["a1", "a2"], "extra": 1}, "weird": 5},
		"realm_access": {"roles": ["r1"]},
		"email_verified": false, "typ": "Bearer", "far": 99999999999999
	}`
	want := []string{
		"iss", "aud", "typ", "exp", "nbf", "auth_time", "email_verified",
		"realm_access.roles",
		"resource_access.aclient.roles", "resource_access.aclient.extra", "resource_access.weird", "resource_access.zclient.roles",
		"alpha", "big", "custom", "f", "far", "n", "nothing", "zeta",
	}
	token := rawJWT(header, payload, "sig")
	var first *auth.Decoded
	for range 20 { // map iteration order is random: the output must not be
		d, err := auth.Decode(token, claimsNow)
		if err != nil {
			t.Fatal(err)
		}
		if got := claimNames(d.Payload); !slices.Equal(got, want) {
			t.Fatalf("payload order:\n got %q\nwant %q", got, want)
		}
		if got := claimNames(d.Header); !slices.Equal(got, []string{"alg", "typ", "kid", "cty", "zz"}) {
			t.Fatalf("header order = %q", got)
		}
		if first == nil {
			first = d
		} else if !slices.EqualFunc(first.Payload, d.Payload, func(a, b auth.Claim) bool {
			return a.Display == b.Display && slices.Equal(a.Items, b.Items)
		}) {
			t.Fatal("two decodes of one token differ")
		}
	}
	d := first
	wantDisplay := map[string]string{
		"big":                   "12345678901234567890",
		"f":                     "0.1",
		"n":                     "1314000",
		"far":                   "99999999999999",
		"nothing":               "",
		"alpha":                 "true",
		"email_verified":        "false",
		"custom":                `{"a":[1,"x",null,1.50],"b":1}`,
		"aud":                   "shipping, account",
		"nbf":                   "soon",
		"exp":                   "2026-11-22 00:00:00 UTC (in 14h)",
		"auth_time":             "2026-11-22 00:00:00 UTC (in 14h)",
		"resource_access.weird": "5",
	}
	for name, disp := range wantDisplay {
		c, ok := d.Claim(name)
		if !ok {
			t.Errorf("claim %q missing", name)
			continue
		}
		if c.Display.String() != disp {
			t.Errorf("%s display = %q, want %q", name, c.Display, disp)
		}
	}
	kinds := map[string]auth.ClaimKind{
		"custom": auth.ClaimObject, "aud": auth.ClaimList, "exp": auth.ClaimTime, "nbf": auth.ClaimText,
		"realm_access.roles": auth.ClaimRoles, "resource_access.aclient.roles": auth.ClaimRoles,
		"big": auth.ClaimText, "resource_access.aclient.extra": auth.ClaimText,
	}
	for name, k := range kinds {
		if c, _ := d.Claim(name); c.Kind != k {
			t.Errorf("%s kind = %v, want %v", name, c.Kind, k)
		}
	}
	if c, _ := d.Claim("auth_time"); !c.Time.Equal(time.Unix(1795305600, 5e8)) {
		t.Errorf("fractional auth_time = %v", c.Time)
	}
	if d.Alg != "ES256" || d.Kid != "k1" || d.Typ != "Bearer" || d.SymmetricSigned {
		t.Errorf("alg %q kid %q typ %q symmetric %v", d.Alg, d.Kid, d.Typ, d.SymmetricSigned)
	}
	if !d.NotBefore.IsZero() {
		t.Errorf("a non-numeric nbf must not fill NotBefore: %v", d.NotBefore)
	}
	if !slices.Equal(d.ClientRoles["aclient"], []string{"a1", "a2"}) || len(d.ClientRoles) != 2 {
		t.Errorf("client roles = %v", d.ClientRoles)
	}
}

// hostile strings put in claim names and values: OSC 52 clipboard write,
// clear screen, 8-bit CSI (raw and as a rune), right-to-left override.
var hostile = []string{"\x1b]52;c;ZXZpbA==\x07", "\x1b[2J", "\x9b31m", "\u009b31m", "\u202e", "\x00\x7f\u2066"}

func TestDecodeSanitizesEverything(t *testing.T) {
	t.Parallel()
	h := strings.Join(hostile, "|")
	header := mustJSON(t, map[string]any{
		"alg": "RS256" + h, "typ": "JWT" + h, "kid": "kid" + h, "x5u" + h: "https://evil.example/" + h,
	})
	payload := mustJSON(t, map[string]any{
		"iss":                "https://evil.example/" + h,
		"sub":                h,
		"typ":                "Bearer" + h,
		"aud":                []any{"a" + h, "b" + h, 7, map[string]any{"k" + h: h}},
		"scope":              "email " + h,
		"preferred_username": "user" + h,
		"email":              h + "@example.com",
		"name" + h:           "value" + h,
		h:                    h,
		"obj":                map[string]any{"key" + h: []any{h, map[string]any{h: h}}},
		"realm_access":       map[string]any{"roles": []any{"role" + h, h}, "other" + h: h},
		"resource_access": map[string]any{
			"client" + h: map[string]any{"roles": []any{"r" + h}},
			"plain":      map[string]any{"roles": []any{h}, "x" + h: []any{h}},
		},
		"exp": 1795305600,
		"iat": "not a time" + h,
	})
	d, err := auth.Decode(rawJWT(header, payload, "sig"), claimsNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Payload) < 12 || len(d.Header) != 4 {
		t.Fatalf("got %d payload and %d header claims", len(d.Payload), len(d.Header))
	}
	check := func(where, s string) { texttest.RequireSafe(t, where, s) }
	for _, cs := range [][]auth.Claim{d.Header, d.Payload} {
		for _, c := range cs {
			check("name", c.Name.String())
			check(c.Name.String()+" display", c.Display.String())
			for _, it := range c.Items {
				check(c.Name.String()+" item", it.String())
			}
		}
	}
	for _, s := range []string{d.Alg, d.Kid, d.Typ, d.Issuer, d.Subject, d.Username, d.Email, d.Scope} {
		check("convenience field", s)
	}
	for _, r := range d.RealmRoles {
		check("realm role", r)
	}
	for client, roles := range d.ClientRoles {
		check("client name", client)
		for _, r := range roles {
			check("client role", r)
		}
	}
	if len(d.ClientRoles) != 2 || len(d.RealmRoles) != 2 {
		t.Errorf("roles lost: realm %q clients %v", d.RealmRoles, d.ClientRoles)
	}
	// The escapes stay visible: the reader can see something was there.
	if !strings.Contains(d.Subject, `\x1b]52;c;ZXZpbA==\x07`) || !strings.Contains(d.Subject, `\u202e`) {
		t.Errorf("subject = %q, want visible escapes", d.Subject)
	}
}

func TestFutureTimes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	d := &auth.Decoded{IssuedAt: now.Add(2 * time.Hour), NotBefore: now.Add(auth.FutureSkew)}
	got := d.FutureTimes(now)
	if len(got) != 1 || got[0].Claim != "iat" || got[0].By != 2*time.Hour {
		t.Fatalf("got %+v; want iat 2h ahead only (nbf within the skew)", got)
	}
	if w := got[0].Warning(); !strings.HasPrefix(w, "iat lies ") || !strings.Contains(w, "in the future") {
		t.Fatalf("warning %q", w)
	}
	d.NotBefore = now.Add(auth.FutureSkew + time.Second)
	if got := d.FutureTimes(now); len(got) != 2 || got[1].Claim != "nbf" || !strings.Contains(got[1].Warning(), "refuse the token until then") {
		t.Fatalf("got %+v", got)
	}
	if got := (&auth.Decoded{IssuedAt: now.Add(-time.Hour)}).FutureTimes(now); len(got) != 0 {
		t.Fatalf("a past iat warned: %+v", got)
	}
}

func TestDecodeSaysWhatATokenIsBoundTo(t *testing.T) {
	t.Parallel()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	tok := enc(map[string]any{"alg": "RS256"}) + "." + enc(map[string]any{"cnf": map[string]any{"jkt": "abc", "x5t#S256": "xyz\x1b"}}) + ".sig"
	d, err := auth.Decode(tok, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if d.BoundJKT != "abc" || strings.Contains(d.BoundX5T, "\x1b") {
		t.Fatalf("bound %q %q", d.BoundJKT, d.BoundX5T)
	}
	if got := d.Binding("abc", ""); got != "DPoP key abc (this key's); certificate xyz\\x1b" {
		t.Errorf("Binding: %q", got)
	}
	if got := d.Binding("other", ""); !strings.Contains(got, "NOT this key's") {
		t.Errorf("another key: %q", got)
	}
	plain, _ := auth.Decode(enc(map[string]any{"alg": "RS256"})+"."+enc(map[string]any{"sub": "x"})+".sig", time.Now())
	if plain.Binding("abc", "") != "" {
		t.Error("a bearer token bound to something")
	}
}
