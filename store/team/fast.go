package team

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// fastBudget bounds CachedFast's one read: a healthy etcd answers in
// milliseconds; anything slower is the engine's to wait for (and to warn
// about), within the team's bound.
const fastBudget = 500 * time.Millisecond

// CachedFast is the first step of Engine.Token for a program that links no
// etcd client (cmd/shipkey): a cached token that is valid for minValid is
// handed out when etcd still holds the team's token set at the revision
// cached — one keys-only read over etcd's JSON gateway (POST /v3/kv/range)
// with net/http. ok is false for anything else (nothing cached, a token due,
// another revision, no answer within fastBudget, an outage already marked,
// an etcd user whose password would need an authentication round trip, a
// damaged cache): the caller then hands the call to the engine, which does
// all of it properly. It never writes anything.
func CachedFast(ctx context.Context, st *store.Store, teamName, label string, minValid time.Duration, now time.Time) (*auth.TokenSet, bool) {
	tc, err := st.Team(teamName)
	if err != nil || !fastReachable(tc) {
		return nil, false
	}
	dir := StateDir(st.StateDir(), teamName)
	if _, err := os.Stat(filepath.Join(dir, UnreachableFileName)); err == nil {
		return nil, false
	}
	e, ok := cachedEntry(st, teamName, dir, label)
	if !ok || e.Token == nil || e.Token.AccessToken == "" || e.TokenRev == 0 || !e.Token.Access().ValidFor(now, minValid) {
		return nil, false
	}
	// The roster key is read in the same request: a roster written since
	// this machine pinned it (a change of members, or one written back over
	// a removal) is the engine's to look at before any token is handed out.
	rosterRev := PinnedRosterRev(dir)
	if rosterRev == 0 {
		return nil, false
	}
	client, err := gatewayClient(tc)
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, fastBudget)
	defer cancel()
	revs, ok := firstModRevisions(ctx, client, tc.Endpoints, rangesTxn(TokenKey(teamName, e.Def.ID), Prefix(teamName)+"roster"), 2)
	if !ok || revs[0] != e.TokenRev || revs[1] != rosterRev {
		return nil, false
	}
	return e.Token, true
}

// fastReachable reports whether CachedFast may ask the team's etcd itself:
// it has endpoints, plain http only where the team allows it, and no etcd
// user (whose password would need an authentication round trip).
func fastReachable(tc store.TeamConn) bool {
	return tc.User == "" && (len(PlainRemote(tc.Endpoints)) == 0 || tc.Insecure) && len(tc.Endpoints) > 0
}

// cachedEntry is key label's entry in the team's cache (in dir), opened
// with this machine's member identity; false when there is none to read.
func cachedEntry(st *store.Store, teamName, dir, label string) (*CacheEntry, bool) {
	sec, err := st.TeamSecrets(teamName)
	if err != nil {
		return nil, false
	}
	id, err := age.ParseX25519Identity(sec.Identity)
	if err != nil {
		return nil, false
	}
	c, err := ReadCache(filepath.Join(dir, CacheFileName), id)
	if err != nil || c.Removed {
		return nil, false
	}
	e := c.ByLabel(label)
	return e, e != nil
}

// firstModRevisions asks the endpoints in turn, until one answers or ctx
// ends, for the mod revisions of the n keys body (a rangesTxn) reads.
func firstModRevisions(ctx context.Context, client *http.Client, endpoints []string, body []byte, n int) ([]int64, bool) {
	for _, ep := range endpoints {
		if revs, ok := modRevisions(ctx, client, strings.TrimSuffix(ep, "/")+"/v3/kv/txn", body, n); ok {
			return revs, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
	}
	return nil, false
}

// rangesTxn is the body of a transaction that reads keys (keys only), at
// one revision.
func rangesTxn(keys ...string) []byte {
	ops := make([]map[string]any, len(keys))
	for i, k := range keys {
		ops[i] = map[string]any{"request_range": map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(k)), "keys_only": true}}
	}
	body, _ := json.Marshal(map[string]any{"success": ops})
	return body
}

// gatewayClient is an HTTP client with the team's TLS settings.
func gatewayClient(tc store.TeamConn) (*http.Client, error) {
	tr := &http.Transport{}
	if tc.CA != "" || tc.Cert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if tc.CA != "" {
			pem, err := os.ReadFile(tc.CA)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, os.ErrInvalid
			}
			cfg.RootCAs = pool
		}
		if tc.Cert != "" {
			cert, err := tls.LoadX509KeyPair(tc.Cert, tc.Key)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr}, nil
}

// modRevisions asks one endpoint for the mod revisions of the n keys a
// rangesTxn reads (0: no such key); ok is false when it did not answer as
// expected.
func modRevisions(ctx context.Context, client *http.Client, url string, body []byte, n int) ([]int64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false
	}
	var r struct {
		Header *struct {
			Revision json.RawMessage `json:"revision"`
		} `json:"header"`
		Responses []struct {
			Range *struct {
				Kvs []struct {
					ModRevision json.RawMessage `json:"mod_revision"`
				} `json:"kvs"`
			} `json:"response_range"`
		} `json:"responses"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&r); err != nil || r.Header == nil || len(r.Responses) != n {
		return nil, false
	}
	revs := make([]int64, n)
	for i, rr := range r.Responses {
		if rr.Range == nil {
			return nil, false
		}
		if len(rr.Range.Kvs) == 0 {
			continue
		}
		if revs[i], err = strconv.ParseInt(strings.Trim(string(rr.Range.Kvs[0].ModRevision), `"`), 10, 64); err != nil {
			return nil, false
		}
	}
	return revs, true
}
