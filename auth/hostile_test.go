package auth

import (
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// hostileJWT is an unsigned JWT-shaped token whose exp is at exp.
func hostileJWT(exp time.Time) string {
	return "eyJhbGciOiJSUzI1NiJ9." + cliB64(fmt.Sprintf(`{"exp":%d}`, exp.Unix())) + ".c2ln"
}

// TestHostileTokenEndpoint: answers no real server should give are refused
// before anything is stored or printed (Login and Refresh alike), with an
// error of the right kind that neither echoes the offending value nor any
// secret, and holds no control character.
func TestHostileTokenEndpoint(t *testing.T) {
	t.Parallel()
	const tok = "good-access-token"
	cases := []struct {
		name    string
		body    string
		kind    ErrorKind
		leak    string // a value the message must not hold
		wantMsg string
	}{
		{"ESC in access token", `{"access_token":"abc\u001b[2Jdef","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "\x1b[2J", "RFC 6750"},
		{"CR LF in access token", `{"access_token":"abc\r\nX-Injected: 1","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "X-Injected", "RFC 6750"},
		{"space in access token", `{"access_token":"abc def","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "abc def", "RFC 6750"},
		{"non-ASCII access token", `{"access_token":"abcé","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "abcé", "RFC 6750"},
		{"= inside access token", `{"access_token":"ab=cd","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "ab=cd", "RFC 6750"},
		{"control byte in refresh token", `{"access_token":"` + tok + `","refresh_token":"rt\u0007x","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "rt\ax", "refresh token"},
		{"space in refresh token", `{"access_token":"` + tok + `","refresh_token":"rt x","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "rt x", "refresh token"},
		{"CR LF in ID token", `{"access_token":"` + tok + `","id_token":"a.b\r\nc","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "a.b", "ID token"},
		{"token_type mac", `{"access_token":"` + tok + `","token_type":"mac","expires_in":300}`, KindMalformedResponse, "mac", "token type"},
		{"token_type DPoP", `{"access_token":"` + tok + `","token_type":"DPoP","expires_in":300}`, KindMalformedResponse, "DPoP", "token type"},
		{"negative expires_in", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":-300}`, KindMalformedResponse, "-300", "expires_in is negative"},
		{"expires_in 9223372036", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":9223372036}`, KindMalformedResponse, "9223372036", "longer than ten years"},
		{"expires_in eleven years", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":346896000}`, KindMalformedResponse, "346896000", "longer than ten years"},
		{"expires_in not a number", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":"soon"}`, KindMalformedResponse, "soon", ""},
		{"expires_in 1e300", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":1e300}`, KindMalformedResponse, "1e300", ""},
		{"expires_in 0", `{"access_token":"` + tok + `","token_type":"Bearer","expires_in":0}`, KindMalformedResponse, "", "already expired"},
		{"negative refresh_expires_in", `{"access_token":"` + tok + `","refresh_token":"rt","token_type":"Bearer","expires_in":300,"refresh_expires_in":-1}`, KindMalformedResponse, "", "refresh_expires_in is negative"},
		{"huge refresh_expires_in", `{"access_token":"` + tok + `","refresh_token":"rt","token_type":"Bearer","expires_in":300,"refresh_expires_in":9223372036854775807}`, KindMalformedResponse, "9223372036854775807", "refresh_expires_in is longer"},
		{"JWT already expired", `{"access_token":"` + hostileJWT(cliT0.Add(-time.Minute)) + `","token_type":"Bearer","expires_in":300}`, KindMalformedResponse, "", "already expired"},
		{"redirect", "", KindServer, "", "redirected"},
		{"huge body", "", KindMalformedResponse, "", "larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := cliJSON(200, tc.body)
			switch tc.name {
			case "redirect":
				h = func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
				}
			case "huge body":
				h = func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"access_token":"`)
					chunk := strings.Repeat("A", 64<<10)
					for range 40 {
						if _, err := io.WriteString(w, chunk); err != nil {
							return
						}
					}
					io.WriteString(w, `","token_type":"Bearer"}`)
				}
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := cliNewClient(t, Options{Now: func() time.Time { return cliT0 }})
			check := func(ts *TokenSet, err error) {
				t.Helper()
				if ts != nil {
					t.Fatalf("a refused answer must give no token set: %+v", ts.Redacted())
				}
				e := cliSafeErr(t, err, tc.kind)
				msg := e.Error()
				if tc.leak != "" && strings.Contains(msg, tc.leak) {
					t.Errorf("the message echoes the value %q: %s", tc.leak, msg)
				}
				if tc.wantMsg != "" && !strings.Contains(msg, tc.wantMsg) {
					t.Errorf("message %q does not say %q", msg, tc.wantMsg)
				}
			}
			check(c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword))
			prev := &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh}
			check(c.Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, prev))
		})
	}
}

// TestTokenResponseAccepted: what real servers send passes the checks:
// token_type in any case or absent, b64token padding, fractional and quoted
// lifetimes, a ten-year lifetime, expires_in 9223372036 refused but 315360000
// kept without overflow.
func TestTokenResponseAccepted(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"access_token":"abc","token_type":"bearer","expires_in":300}`,
		`{"access_token":"abc","token_type":"BEARER","expires_in":300}`,
		`{"access_token":"abc","expires_in":300}`,
		`{"access_token":"a-b.c_d~e+f/g==","token_type":"Bearer","expires_in":"300"}`,
		`{"access_token":"abc","token_type":"Bearer","expires_in":315360000,"refresh_token":"r!#$%&'()*+,-./:;<=>?@[]^_{|}~","refresh_expires_in":315360000}`,
		`{"access_token":"abc","token_type":"Bearer"}`,
	} {
		srv := httptest.NewServer(cliJSON(200, body))
		c := cliNewClient(t, Options{Now: func() time.Time { return cliT0 }})
		ts, err := c.Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		srv.Close()
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if exp := ts.AccessExpiry(); !exp.IsZero() && !exp.After(cliT0) {
			t.Errorf("%s: expiry %v not after the arrival", body, exp)
		}
		if ts.ExpiresIn == 315360000 && !ts.AccessExpiresAt.Equal(cliT0.Add(315360000*time.Second)) {
			t.Errorf("ten years: %v", ts.AccessExpiresAt)
		}
	}
}

// TestRefreshReturningExpiredToken: a refresh whose new access token is
// already expired is an error, and the previous set is not touched.
func TestRefreshReturningExpiredToken(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(cliJSON(200, `{"access_token":"`+hostileJWT(cliT0.Add(-time.Second))+`","token_type":"Bearer","expires_in":300}`))
	defer srv.Close()
	c := cliNewClient(t, Options{Now: func() time.Time { return cliT0 }})
	prev := &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh}
	ts, err := c.Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, prev)
	if ts != nil {
		t.Fatalf("got a token set: %+v", ts.Redacted())
	}
	cliSafeErr(t, err, KindMalformedResponse)
	if prev.AccessToken != cliAccess || prev.RefreshToken != cliRefresh {
		t.Fatal("the previous set was changed")
	}
}

// Secrets of the redaction tests: characters every encoding changes.
const (
	redactPassword = "my pass!word&1"
	redactSecret   = "cs&sec<ret>x"
	redactClientID = "c1"
)

// TestRedactEveryEncoding: a server (or proxy) error page that echoes the
// request shows the password and client secret in whatever encoding it
// uses; none of them reaches the error. One subtest per encoding.
func TestRedactEveryEncoding(t *testing.T) {
	t.Parallel()
	jsonHTML := func(s string) string {
		r := strings.NewReplacer("&", `\u0026`, "<", `\u003c`, ">", `\u003e`)
		return r.Replace(s)
	}
	numeric := func(s string, hex bool) string {
		var b strings.Builder
		for _, r := range s {
			if hex {
				fmt.Fprintf(&b, "&#x%x;", r)
			} else {
				fmt.Fprintf(&b, "&#%d;", r)
			}
		}
		return b.String()
	}
	basic := func(enc *base64.Encoding, id, sec string) string { return enc.EncodeToString([]byte(id + ":" + sec)) }
	qid, qsec := url.QueryEscape(redactClientID), url.QueryEscape(redactSecret)
	cases := []struct {
		name         string
		pass, secret string // the encoded forms echoed ("" skips)
		basicAuth    bool
	}{
		{"verbatim", redactPassword, redactSecret, false},
		{"QueryEscape", url.QueryEscape(redactPassword), url.QueryEscape(redactSecret), false},
		{"form encoding with %20 for space", strings.ReplaceAll(url.QueryEscape(redactPassword), "+", "%20"), "", false},
		{"lower-case percent escapes", strings.ToLower(url.QueryEscape(redactPassword)), strings.ToLower(url.QueryEscape(redactSecret)), false},
		{"PathEscape", url.PathEscape(redactPassword), url.PathEscape(redactSecret), false},
		{"html.EscapeString", html.EscapeString(redactPassword), html.EscapeString(redactSecret), false},
		{"decimal character references", numeric(redactPassword, false), numeric(redactSecret, false), false},
		{"hex character references", numeric(redactPassword, true), numeric(redactSecret, true), false},
		{"decimal references for the escaped characters", strings.ReplaceAll(redactPassword, "&", "&#38;"), strings.NewReplacer("&", "&#38;", "<", "&#60;", ">", "&#62;").Replace(redactSecret), false},
		{"JSON with HTML-safe escapes", jsonHTML(redactPassword), jsonHTML(redactSecret), false},
		{"JSON without HTML escapes", redactPassword, redactSecret, false},
		{"base64 std of id:secret", "", basic(base64.StdEncoding, redactClientID, redactSecret), true},
		{"base64 URL of id:secret", "", basic(base64.URLEncoding, redactClientID, redactSecret), true},
		{"base64 std of escaped id:secret (Basic as x/oauth2 sends it)", "", basic(base64.StdEncoding, qid, qsec), true},
		{"base64 URL of escaped id:secret", "", basic(base64.URLEncoding, qid, qsec), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			echo := "You sent: password=" + tc.pass + " client_secret=" + tc.secret
			for _, shape := range []struct {
				name, ct, body string
			}{
				{"html page", "text/html", "<html><body>" + echo + "</body></html>"},
				{"JSON description", "application/json", `{"error":"invalid_request","error_description":"` + echo + `"}`},
			} {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", shape.ct)
					w.WriteHeader(http.StatusBadRequest)
					io.WriteString(w, shape.body)
				}))
				c := cliNewClient(t, Options{})
				conn := Connection{ClientID: redactClientID, TokenURL: srv.URL + "/token", BasicAuth: tc.basicAuth}
				_, err := c.Login(cliCtx(t), conn, ClientAuth{Secret: redactSecret}, "alice", redactPassword)
				srv.Close()
				if err == nil {
					t.Fatalf("%s: no error", shape.name)
				}
				msg := err.Error()
				for _, leak := range []string{tc.pass, tc.secret} {
					if leak != "" && strings.Contains(msg, leak) {
						t.Errorf("%s: the message holds %q: %s", shape.name, leak, msg)
					}
				}
				if !strings.Contains(msg, "[redacted]") {
					t.Errorf("%s: nothing redacted: %s", shape.name, msg)
				}
			}
		})
	}
}

// TestNonKeycloakRefusals: servers that are not Keycloak refuse without an
// OAuth error body. A refused password grant says the credentials were
// refused (not "try again later"); a refused refresh means log in again.
func TestNonKeycloakRefusals(t *testing.T) {
	t.Parallel()
	bodies := []struct{ name, ct, body string }{
		{"empty", "", ""},
		{"text/plain", "text/plain", "Access denied"},
		{"html", "text/html", "<h1>Forbidden</h1>"},
		{"json without error", "application/json", `{"message":"nope"}`},
	}
	handler := func(status int, ct, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	for _, b := range bodies {
		for _, status := range []int{401, 403} {
			t.Run(fmt.Sprintf("login %d %s", status, b.name), func(t *testing.T) {
				srv := httptest.NewServer(handler(status, b.ct, b.body))
				defer srv.Close()
				_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
				e := cliSafeErr(t, err, KindCredentialsRefused)
				if !strings.Contains(e.Error(), "refused the username/password or the client credentials") || !strings.Contains(e.Hint, "client secret") {
					t.Errorf("message: %s", e)
				}
			})
		}
		for _, status := range []int{400, 401} {
			t.Run(fmt.Sprintf("refresh %d %s", status, b.name), func(t *testing.T) {
				srv := httptest.NewServer(handler(status, b.ct, b.body))
				defer srv.Close()
				prev := &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh}
				_, err := cliNewClient(t, Options{}).Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, prev)
				cliSafeErr(t, err, KindLoginRequired)
			})
		}
	}
	if KindCredentialsRefused.String() != "credentials_refused" {
		t.Errorf("name %q", KindCredentialsRefused.String())
	}
}
