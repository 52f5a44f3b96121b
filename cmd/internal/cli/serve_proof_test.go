package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/store"
)

// POST /v1/proof answers a DPoP-bound key's token with a proof for the
// request named in its body, which the API accepts once; a bearer key, a bad
// body, a path without api_url and a key not served are refused with their
// status and one line.
func TestProofEndpoint(t *testing.T) {
	t.Parallel()
	st, srv := testStore(t, time.Now)
	_, _, err := st.Create(context.Background(), store.NewKey{Label: "dpop", Definition: store.Definition{
		Connection: auth.Connection{AuthURL: srv.URL(), ClientID: authtest.DemoDPoPClientID, DPoP: true}, Username: authtest.DemoUsername},
		ClientSecret: authtest.DemoClientSecret, Password: authtest.DemoPassword})
	if err != nil {
		t.Fatal(err)
	}
	rs := authtest.NewResourceServer(authtest.ResourceConfig{Issuer: srv.Issuer(), ClientID: authtest.DemoClientID, ClientSecret: authtest.DemoClientSecret})
	t.Cleanup(rs.Close)
	post := func(h http.Handler, path, body string) (int, map[string]string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://shipkey"+path, strings.NewReader(body)))
		var doc map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &doc)
		return rec.Code, doc
	}
	all := newTokenHandler(st, nil, &secretSet{}, "serve")

	status, doc := post(all, "/v1/proof/dpop", `{"method":"get","url":"`+rs.URL()+`/v1/x?page=2"}`)
	if status != http.StatusOK || doc["dpop_proof"] == "" || doc["token_type"] != "DPoP" || doc["jkt"] == "" {
		t.Fatalf("proof: %d %v", status, doc)
	}
	send := func() int {
		req, _ := http.NewRequest(http.MethodGet, rs.URL()+"/v1/x?page=2", nil)
		req.Header.Set("Authorization", "DPoP "+doc["access_token"])
		req.Header.Set("DPoP", doc["dpop_proof"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(); got != http.StatusOK {
		t.Fatalf("the API answered the proof %d", got)
	}
	if got := send(); got != http.StatusUnauthorized {
		t.Fatalf("the API answered the replayed proof %d, want 401", got)
	}

	for _, tc := range []struct {
		h          http.Handler
		path, body string
		status     int
		code, says string
	}{
		{all, "/v1/proof/demo", `{"method":"GET","url":"https://api.example.com/x"}`, http.StatusBadRequest, "not_dpop", "has no DPoP key"},
		{all, "/v1/proof/dpop", `{"method":"GET"`, http.StatusBadRequest, "invalid_request", "the body is not"},
		{all, "/v1/proof/dpop", `{"method":"G T","url":"https://api.example.com/x"}`, http.StatusBadRequest, "invalid_request", "not an HTTP method"},
		{all, "/v1/proof/dpop", `{"method":"GET","url":"/v1/x"}`, http.StatusBadRequest, "invalid_request", "has no api_url"},
		{all, "/v1/proof/nope", `{"method":"GET","url":"https://api.example.com/x"}`, http.StatusNotFound, "no_such_key", ""},
		{newTokenHandler(st, []string{"demo"}, &secretSet{}, "serve"), "/v1/proof/dpop", `{"method":"GET","url":"https://api.example.com/x"}`, http.StatusForbidden, "not_served", ""},
	} {
		status, doc := post(tc.h, tc.path, tc.body)
		if status != tc.status || doc["error"] != tc.code || !strings.Contains(doc["error_description"], tc.says) || doc["dpop_proof"] != "" {
			t.Errorf("%s %s: %d %v, want %d %s", tc.path, tc.body, status, doc, tc.status, tc.code)
		}
	}
}
