package cli

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestInspectReadsWhatPeoplePaste: inspect - finds the token in what people
// pipe to it: after blank lines, inside a whole token response (its
// access_token), an encrypted JWT (its header, called encrypted), and says
// what is wrong with input over the size of any token.
func TestInspectReadsWhatPeoplePaste(t *testing.T) {
	t.Parallel()
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	jwt := seg(`{"alg":"RS256","typ":"JWT"}`) + "." + seg(`{"sub":"alice","preferred_username":"alice"}`) + "." + seg("signature")
	jwe := seg(`{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"enc-1"}`) + "." + seg("key") + "." + seg("iv") + "." + seg("ciphertext") + "." + seg("tag")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	inspect := func(stdin string, json bool) (string, string, int) {
		ios, out, errOut := testIO(stdin)
		err := inspectRun(context.Background(), &inspectOptions{IO: ios, Now: func() time.Time { return now }, Token: "-", JSON: json})
		if err != nil && !silent(err) {
			errOut.WriteString(errorLine(err).String())
		}
		return out.String(), errOut.String(), exitCode(err)
	}
	for _, tc := range []struct {
		name, stdin string
		json        bool
		want        []string
	}{
		{"blank first lines", "\n  \n\t\n" + jwt + "\n", false, []string{"preferred_username  alice"}},
		{"a token response", `{"access_token":"` + jwt + `","token_type":"Bearer","expires_in":300,"refresh_token":"r.t.x"}`, false, []string{"Token:     JWT", "preferred_username  alice"}},
		{"an indented token response", "\n{\n  \"token_type\": \"Bearer\",\n  \"access_token\": \"" + jwt + "\"\n}\n", true, []string{`"format": "jwt"`, `"preferred_username": "alice"`}},
		{"a JWE", jwe + "\n", false, []string{"Token:     JWE, encrypted", "enc  A256GCM", "kid  enc-1"}},
		{"a JWE as JSON", jwe, true, []string{`"format": "jwe"`, `"enc": "A256GCM"`}},
	} {
		out, errOut, code := inspect(tc.stdin, tc.json)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", tc.name, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
		if strings.Contains(out, "opaque") {
			t.Errorf("%s: called opaque:\n%s", tc.name, out)
		}
	}

	// Over 64 KiB: the size is named, not "no token".
	big := seg(`{"alg":"RS256"}`) + "." + strings.Repeat("A", 70<<10) + "." + seg("s")
	if _, errOut, code := inspect(big+"\n", false); code == 0 || strings.Contains(errOut, "no token on stdin") || !strings.Contains(errOut, "too large") {
		t.Errorf("a 70 KiB token: exit %d, %q", code, errOut)
	}
	if _, errOut, code := inspect(strings.Repeat("x", 300<<10), false); code == 0 || !strings.Contains(errOut, "over 256 KiB") {
		t.Errorf("300 KiB on stdin: exit %d, %q", code, errOut)
	}
	if _, errOut, code := inspect(`{"token_type":"Bearer"}`, false); code == 0 || !strings.Contains(errOut, "without an access_token") {
		t.Errorf("JSON without a token: exit %d, %q", code, errOut)
	}
	if _, errOut, code := inspect("\n \n", false); code != exitUsage || !strings.Contains(errOut, "no token on stdin") {
		t.Errorf("blank stdin: exit %d, %q", code, errOut)
	}
}
