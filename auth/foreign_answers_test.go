package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The answers of foreign (not Keycloak) servers that shipkey once
// misread, each scripted as that server gave it, on 127.0.0.1.

// discoveryServer serves a discovery document naming its own URLs for the
// endpoints given (name → path) and the handlers given for those paths;
// every other path is a plain 404.
func discoveryServer(t *testing.T, endpoints map[string]string, handlers map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]string{"issuer": srv.URL}
		for name, path := range endpoints {
			doc[name] = srv.URL + path
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	for path, h := range handlers {
		mux.HandleFunc(path, h)
	}
	return srv
}

// TestForeignServerErrorAdvice: each refusal says what is wrong with this
// server and what to do, in the server's terms, never in raw markup.
func TestForeignServerErrorAdvice(t *testing.T) {
	t.Parallel()
	t.Run("password grant not offered", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(cliJSON(400, `{"error":"unsupported_grant_type","error_description":"unsupported grant_type requested"}`))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Login(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		e := cliSafeErr(t, err, KindDirectGrantDisabled)
		if !strings.Contains(e.Msg, "does not offer the password grant") || !strings.Contains(e.Error(), "--grant device-code") || !strings.Contains(e.Error(), "--grant authcode") {
			t.Errorf("advice = %v", err)
		}
		if strings.Contains(err.Error(), "Direct Access Grants") {
			t.Errorf("Keycloak's client setting named for a server without the grant: %v", err)
		}
	})
	t.Run("client credentials 403 without a body", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Obtain(cliCtx(t), GrantClientCredentials, Request{Conn: cliTokenConn(srv.URL), ClientAuth: ClientAuth{Secret: cliClientSecret}})
		e := cliSafeErr(t, err, KindInvalidClient)
		if !strings.Contains(e.Hint, "may require a scope") {
			t.Errorf("no scope hint: %v", err)
		}
	})
	t.Run("no scope guess when the key sends a scope", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
		defer srv.Close()
		conn := cliTokenConn(srv.URL)
		conn.Scopes = []string{"write"}
		_, err := cliNewClient(t, Options{}).Obtain(cliCtx(t), GrantClientCredentials, Request{Conn: conn, ClientAuth: ClientAuth{Secret: cliClientSecret}})
		e := cliSafeErr(t, err, KindInvalidClient)
		if strings.Contains(e.Error(), "scope") {
			t.Errorf("a scope guessed missing from a request that had one: %v", err)
		}
		_, err = cliNewClient(t, Options{}).Login(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, "alice", cliPassword)
		e = cliSafeErr(t, err, KindCredentialsRefused)
		if strings.Contains(e.Error(), "scope") || !strings.Contains(e.Error(), "--basic-auth") {
			t.Errorf("login with a scope: %v", err)
		}
	})
	t.Run("renewal answered by an HTML 500 page", func(t *testing.T) {
		t.Parallel()
		page := "<!DOCTYPE html>\n<html><head><script>window.location='/x?" + cliRefresh + "'</script><style>h1{color:red}</style>" +
			"<title>\n  Internal   Server Error\n</title></head><body><h1>Oops &amp; sorry</h1><p>ref " + cliClientSecret + "</p></body></html>"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, page)
		}))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Refresh(cliCtx(t), cliTokenConn(srv.URL), ClientAuth{Secret: cliClientSecret}, &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh})
		e := cliSafeErr(t, err, KindServer)
		if e.Excerpt != "Internal Server Error" || !strings.Contains(err.Error(), "status 500") {
			t.Errorf("excerpt %q in %v", e.Excerpt, err)
		}
		for _, markup := range []string{"<", "script", "window.location", "color:red"} {
			if strings.Contains(err.Error(), markup) {
				t.Errorf("markup %q in %v", markup, err)
			}
		}
	})
	t.Run("no device authorization endpoint", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<html><body><h1>404 Not Found</h1><script>track()</script></body></html>")
		}))
		defer srv.Close()
		_, err := cliNewClient(t, Options{}).Obtain(cliCtx(t), GrantDeviceCode, Request{
			Conn: Connection{AuthURL: srv.URL, ClientID: "shipping"}, ClientAuth: ClientAuth{Secret: cliClientSecret}, Prompt: func(Prompt) {}})
		e := cliSafeErr(t, err, KindConfig)
		want := "no device authorization endpoint at " + srv.URL + "/auth/realms/master/protocol/openid-connect/auth/device (status 404); this server may not support the device grant"
		if e.Msg != want || strings.Contains(err.Error(), "<") {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	})
}

// TestEndSessionAtABrowserEndpoint: a discovered end_session_endpoint that
// answers a POST with a redirect (a page for browsers, not an API) does not
// end the session; the revocation endpoint does it instead.
func TestEndSessionAtABrowserEndpoint(t *testing.T) {
	t.Parallel()
	var revoked atomic.Int32
	srv := discoveryServer(t,
		map[string]string{"token_endpoint": "/token", "end_session_endpoint": "/session/end", "revocation_endpoint": "/revoke"},
		map[string]http.HandlerFunc{
			"/session/end": func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/session/end/confirm", http.StatusFound)
			},
			"/revoke": func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.FormValue("token") != "" {
					revoked.Add(1)
				}
				w.WriteHeader(http.StatusOK)
			},
		})
	conn := Connection{Issuer: srv.URL, ClientID: "shipping"}
	res, err := cliNewClient(t, Options{}).EndSession(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, &TokenSet{AccessToken: cliAccess, RefreshToken: cliRefresh})
	if err != nil || res.Via != "revocation" || revoked.Load() != 2 {
		t.Fatalf("EndSession = %+v, %v; %d tokens revoked, want 2", res, err, revoked.Load())
	}
}

// TestLivenessAtKeycloaksIntrospectionPath: a server whose discovery
// document names no introspection endpoint, though it answers at Keycloak's
// path, is asked there; and userinfo's generic refusal is not quoted as if
// it were a verdict on the token.
func TestLivenessAtKeycloaksIntrospectionPath(t *testing.T) {
	t.Parallel()
	const generic = "The access token provided is expired, revoked, malformed, or invalid for other reasons"
	userinfo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		cliJSON(401, `{"error":"invalid_token","error_description":"`+generic+`"}`)(w, r)
	}
	const introspect = "/auth/realms/master/protocol/openid-connect/token/introspect"
	srv := discoveryServer(t,
		map[string]string{"token_endpoint": "/auth/realms/master/protocol/openid-connect/token", "userinfo_endpoint": "/me"},
		map[string]http.HandlerFunc{
			"/me": userinfo,
			introspect: func(w http.ResponseWriter, r *http.Request) {
				cliJSON(200, `{"active":true}`)(w, r)
			},
		})
	// The issuer is the realm's URL, as discovery answers at it.
	conn := Connection{AuthURL: srv.URL, Issuer: srv.URL, ClientID: "shipping"}
	live := cliNewClient(t, Options{}).Liveness(cliCtx(t), conn, ClientAuth{Secret: cliClientSecret}, cliAccess)
	if live.State != LiveActive || live.Via.String() != "introspection" {
		t.Errorf("liveness = %+v, want active by introspection", live)
	}

	// Without introspection anywhere: cannot tell, in shipkey's words.
	bare := discoveryServer(t, map[string]string{"token_endpoint": "/token", "userinfo_endpoint": "/me"}, map[string]http.HandlerFunc{"/me": userinfo})
	live = cliNewClient(t, Options{}).Liveness(cliCtx(t), Connection{AuthURL: bare.URL, Issuer: bare.URL, ClientID: "shipping"}, ClientAuth{Secret: cliClientSecret}, cliAccess)
	if live.State != LiveUnknown || strings.Contains(live.Detail().String(), "expired, revoked") {
		t.Errorf("liveness = %+v: the server's generic words quoted as a verdict", live)
	}
}
