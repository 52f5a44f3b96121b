package auth

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bodyTransport answers every request with one status and body, without a
// network.
type bodyTransport struct {
	status int
	ctype  string
	body   string
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: b.status,
		Header:     http.Header{"Content-Type": {b.ctype}},
		Body:       io.NopCloser(strings.NewReader(b.body)),
		Request:    r,
	}, nil
}

// FuzzTokenResponse: whatever a token endpoint answers, Login never panics,
// a token set it accepts obeys the checks docs/keycloak.md promises (a b64token
// access token, visible-ASCII refresh and ID tokens, Bearer, lifetimes from 0
// to ten years), and an error is one line without the secrets sent.
func FuzzTokenResponse(f *testing.F) {
	f.Add(200, "application/json", `{"access_token":"abc.def","token_type":"Bearer","expires_in":300,"refresh_token":"r","refresh_expires_in":1800}`)
	f.Add(200, "application/json", `{"access_token":"a b","token_type":"bearer","expires_in":-1}`)
	f.Add(400, "application/json", `{"error":"invalid_grant","error_description":"fuzz-secret-1 &quot;"}`)
	f.Add(200, "application/json", `{"access_token":"x","expires_in":1e400}`)
	f.Add(500, "text/html", `<p>fuzz-pass&#34;word</p>`)
	f.Add(200, "application/x-www-form-urlencoded", `access_token=abc&token_type=bearer&expires_in=60`)
	const secret, password = "fuzz-secret-1", `fuzz-pass"word`
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, ctype, body string) {
		// 200 and the refusals; 5xx and 429 are retried after a pause.
		status = []int{200, 400, 401, 403}[(status&0x7fffffff)%4]
		c, err := NewClient(Options{
			HTTPClient: &http.Client{Transport: bodyTransport{status: status, ctype: ctype, body: body}},
			Now:        func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn := Connection{ClientID: "fuzz-client", TokenURL: "http://127.0.0.1:1/token"}
		ts, err := c.Login(ctx, conn, ClientAuth{Secret: secret}, "alice", password)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, secret) || strings.Contains(msg, password) || strings.ContainsAny(msg, "\n\x1b") {
				t.Fatalf("error leaks or is not one line: %q", msg)
			}
			return
		}
		if !b64tokenSyntax(ts.AccessToken) || (ts.RefreshToken != "" && !visibleASCII(ts.RefreshToken)) || (ts.IDToken != "" && !visibleASCII(ts.IDToken)) {
			t.Fatalf("accepted unsafe tokens: %+v", ts)
		}
		const tenYears = 10 * 366 * 24 * 3600
		if ts.ExpiresIn < 0 || ts.ExpiresIn > tenYears || ts.RefreshExpiresIn < 0 || ts.RefreshExpiresIn > tenYears {
			t.Fatalf("accepted lifetimes %d, %d", ts.ExpiresIn, ts.RefreshExpiresIn)
		}
		// Absent means Bearer (docs/keycloak.md's rule); anything else is refused.
		if ts.TokenType != "" && !strings.EqualFold(ts.TokenType, "bearer") {
			t.Fatalf("accepted token_type %q", ts.TokenType)
		}
	})
}

// b64tokenSyntax is RFC 6750's b64token as docs/keycloak.md states it, written
// apart from the code under test.
func b64tokenSyntax(s string) bool {
	i := 0
	for i < len(s) && (isAlnum(s[i]) || strings.IndexByte("-._~+/", s[i]) >= 0) {
		i++
	}
	if i == 0 {
		return false
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i == len(s)
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
