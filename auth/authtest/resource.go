package authtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ResourceConfig describes a ResourceServer: the authorization server it
// trusts and the credentials it introspects tokens with.
type ResourceConfig struct {
	// Issuer is the authorization server's issuer; its discovery document
	// (Issuer+"/.well-known/openid-configuration") names the introspection
	// endpoint. An authtest Server's Issuer() or oidc-provider's issuer.
	Issuer string
	// IntrospectionURL, when set, is used as it is and discovery is skipped.
	IntrospectionURL string
	// ClientID and ClientSecret authenticate the resource server at the
	// introspection endpoint (client_secret_post), as a confidential client.
	ClientID, ClientSecret string
	// Realm is the realm parameter of the WWW-Authenticate challenge
	// (default "shipping").
	Realm string
	// Audience, when set, is the API's own name at the authorization
	// server: a token whose aud (by introspection) does not name it is
	// refused 401 invalid_token, as an API that takes only tokens issued
	// for it does (tokens for it come by token exchange).
	Audience string
	// DPoPNonce makes the server require its own nonce in DPoP proofs
	// (RFC 9449 §9): a proof without the current one is answered 401
	// use_dpop_nonce with a DPoP-Nonce header.
	DPoPNonce bool
}

// ResourceServer is an API protected by an authorization server, on
// loopback: it checks every request's token by introspection (RFC 7662) at
// the authorization server, with no cache, and a DPoP-bound token's proof
// (RFC 9449: CheckDPoP's htm, htu, ath, iat and replayed jti, the proof's
// key against the token's cnf.jkt, the server's nonce with DPoPNonce); a
// DPoP-bound token sent as a plain bearer token is refused, so a token revoked or a
// session ended there is refused at the next request, as a careful real API
// does. A refused request's body is never read (a client that sent
// Expect: 100-continue can send it again). A request without a token, or with one the server says is not
// active, is answered 401 with an RFC 6750 challenge in WWW-Authenticate
// (error="invalid_token" for a refused token). An accepted request is
// answered 200 with a JSON Echo of what arrived, so that a test can check a
// body came whole. Paths under /test/ answer canned bodies (see Handler).
//
// It never logs a token and listens only on 127.0.0.1.
type ResourceServer struct {
	cfg    ResourceConfig
	ln     net.Listener
	srv    *http.Server
	url    string
	client *http.Client

	replay *ReplayCache // DPoP proofs' jti seen

	mu         sync.Mutex
	introspect string // the introspection endpoint, once discovered
	nonce      string // the DPoP nonce required (DPoPNonce)
	counts     map[string]int
	refuseNext int // answer the next n authenticated requests 401 invalid_token
}

// Echo is the JSON body a ResourceServer answers an accepted request with.
type Echo struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Query       string `json:"query,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// BodyBytes and BodySHA256 describe the request body as it arrived:
	// compare them with what was sent.
	BodyBytes  int64  `json:"body_bytes"`
	BodySHA256 string `json:"body_sha256"`
	// Subject, ClientID and Scope are what introspection said of the token.
	Subject  string `json:"sub,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// Audience is the token's aud by introspection.
	Audience []string `json:"aud,omitempty"`
	// DPoP says the token was DPoP-bound and its proof passed.
	DPoP bool `json:"dpop,omitempty"`
	// Headers are the request's headers other than Authorization and DPoP.
	Headers map[string]string `json:"headers,omitempty"`
}

// NewResourceServer starts a resource server on 127.0.0.1 with a random
// port. It panics if it cannot listen, like httptest.NewServer. Close it when
// done.
func NewResourceServer(cfg ResourceConfig) *ResourceServer {
	rs, err := StartResourceServer("127.0.0.1:0", cfg)
	if err != nil {
		panic("authtest: " + err.Error())
	}
	return rs
}

// StartResourceServer starts a resource server on addr, which must be a
// loopback address (as Start).
func StartResourceServer(addr string, cfg ResourceConfig) (*ResourceServer, error) {
	hostport, err := loopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	if cfg.Issuer == "" && cfg.IntrospectionURL == "" {
		return nil, errors.New("resource server: name the authorization server (Issuer or IntrospectionURL)")
	}
	if cfg.Realm == "" {
		cfg.Realm = "shipping"
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", hostport, err)
	}
	rs := &ResourceServer{
		cfg:        cfg,
		ln:         ln,
		url:        "http://" + ln.Addr().String(),
		client:     &http.Client{Timeout: 10 * time.Second},
		introspect: cfg.IntrospectionURL,
		counts:     map[string]int{},
		replay:     &ReplayCache{},
	}
	if cfg.DPoPNonce {
		rs.nonce = randomToken(16)
	}
	rs.srv = &http.Server{Handler: rs.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rs.srv.Serve(ln) }()
	return rs, nil
}

// URL is the API's base URL, e.g. "http://127.0.0.1:41235".
func (rs *ResourceServer) URL() string { return rs.url }

// Close stops the server.
func (rs *ResourceServer) Close() { _ = rs.srv.Close() }

// Count is the number of requests seen so far by outcome: "requests" (all),
// "accepted", "refused" (401) and "introspections".
func (rs *ResourceServer) Count(name string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.counts[name]
}

// RefuseNext makes the next n requests that carry a token be answered 401
// invalid_token whatever introspection would say, as an API whose own view
// of a token is stale does: a client renews and retries, and sees a second
// refusal when n > 1.
func (rs *ResourceServer) RefuseNext(n int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.refuseNext = n
}

func (rs *ResourceServer) count(name string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.counts[name]++
}

// Handler serves the API: every path checks the token; an accepted request
// gets its Echo, except these canned answers (for screens and clients):
//
//	/test/status/{code}   answers code with the Echo as body
//	/test/large?n=N       a JSON array of N objects (default 2000)
//	/test/hostile         JSON whose strings carry terminal control sequences
//	/test/hostile?raw     the same sequences as raw bytes (text/plain)
//	/test/bytes?n=N       N bytes of application/octet-stream (streamed)
//	/test/pages?pages=N&per=M&page=P   page P of N, M items each, with a
//	                      Link header naming the next page (Pages)
func (rs *ResourceServer) Handler() http.Handler {
	return http.HandlerFunc(rs.serve)
}

func (rs *ResourceServer) serve(w http.ResponseWriter, r *http.Request) {
	rs.count("requests")
	info, scheme, ok := rs.authorize(w, r)
	if !ok {
		return
	}
	rs.count("accepted")
	if route, ok := testRoutes[r.URL.Path]; ok {
		route(w, r)
		return
	}
	rs.echo(w, r, info, scheme)
}

// authorize checks the request's access token (introspected, for this API,
// with its proof when bound) and answers a refusal itself: ok is false
// then.
func (rs *ResourceServer) authorize(w http.ResponseWriter, r *http.Request) (_ introspection, scheme string, ok bool) {
	scheme, tok, ok := accessToken(r)
	if !ok {
		// RFC 6750 §3.1: no error code when the request carried no token.
		rs.challenge(w, "", "")
		return introspection{}, "", false
	}
	if rs.refusingNext() {
		rs.challenge(w, "invalid_token", "The access token is not active")
		return introspection{}, "", false
	}
	info, err := rs.introspectToken(r, tok)
	code, desc := "", ""
	switch {
	case err != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "introspection failed", "error_description": err.Error()})
		return introspection{}, "", false
	case !info.Active:
		code, desc = "invalid_token", "The access token is not active"
	case rs.cfg.Audience != "" && !slices.Contains(audiences(info.Audience), rs.cfg.Audience):
		code, desc = "invalid_token", "The access token is not for this API (aud)"
	default:
		code, desc = rs.checkBinding(r, scheme, tok, info)
	}
	if code != "" {
		rs.challenge(w, code, desc)
		return introspection{}, "", false
	}
	return info, scheme, true
}

// refusingNext reports whether this request is one of those RefuseNext
// asked to refuse, and counts it.
func (rs *ResourceServer) refusingNext() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.refuseNext <= 0 {
		return false
	}
	rs.refuseNext--
	return true
}

// testRoutes are the paths that answer with test data instead of an echo.
var testRoutes = map[string]http.HandlerFunc{
	"/test/large": writeLarge,
	"/test/hostile": func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("raw") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, hostileRaw)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, hostileBody)
	},
	"/test/bytes": writeBytes,
	"/test/pages": writePaged,
}

// echo answers with what the request was (Echo), its body hashed, with the
// status /test/status/N asks for.
func (rs *ResourceServer) echo(w http.ResponseWriter, r *http.Request, info introspection, scheme string) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	e := Echo{
		Method:      r.Method,
		Path:        r.URL.Path,
		Query:       r.URL.RawQuery,
		ContentType: r.Header.Get("Content-Type"),
		BodyBytes:   n,
		BodySHA256:  hex.EncodeToString(h.Sum(nil)),
		Subject:     info.Subject,
		ClientID:    info.ClientID,
		Scope:       info.Scope,
		Audience:    audiences(info.Audience),
		DPoP:        scheme == "dpop",
		Headers:     map[string]string{},
	}
	for k := range r.Header {
		if k != "Authorization" && k != "Dpop" {
			e.Headers[k] = r.Header.Get(k)
		}
	}
	status := http.StatusOK
	if code, ok := strings.CutPrefix(r.URL.Path, "/test/status/"); ok {
		if c, err := strconv.Atoi(code); err == nil && c >= 200 && c <= 599 {
			status = c
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(e)
}

// checkBinding checks a DPoP-bound token's proof; it returns the error code
// and description of a refusal, or "" for a request that may go on.
func (rs *ResourceServer) checkBinding(r *http.Request, scheme, tok string, info introspection) (string, string) {
	bound := info.Cnf.JKT != ""
	switch {
	case scheme == "bearer" && bound:
		return "invalid_token", "The access token is bound to a DPoP key: send it with the DPoP scheme and a proof"
	case scheme == "bearer":
		return "", ""
	case !bound:
		return "invalid_token", "The access token is not DPoP-bound"
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		return "invalid_dpop_proof", "DPoP proof is missing"
	}
	rs.mu.Lock()
	nonce := rs.nonce
	rs.mu.Unlock()
	target := "http://" + r.Host + r.URL.RequestURI()
	jkt, err := CheckDPoP(proofs[0], DPoPRequest{Method: r.Method, URL: target, AccessToken: tok, Nonce: nonce, Replay: rs.replay})
	if err != nil {
		var de *DPoPError
		if errors.As(err, &de) {
			return de.Code, de.Description
		}
		return "invalid_dpop_proof", "DPoP proof refused"
	}
	if jkt != info.Cnf.JKT {
		return "invalid_dpop_proof", "DPoP proof key does not match the token's cnf.jkt"
	}
	rs.count("dpop")
	return "", ""
}

// challenge answers 401 with an RFC 6750 challenge, or RFC 9449 §7.1's
// DPoP challenge for a proof's error (with a DPoP-Nonce header when the
// nonce is what was missing).
func (rs *ResourceServer) challenge(w http.ResponseWriter, code, desc string) {
	rs.count("refused")
	c := `Bearer realm="` + rs.cfg.Realm + `"`
	if code == "invalid_dpop_proof" || code == "use_dpop_nonce" {
		c = `DPoP realm="` + rs.cfg.Realm + `", algs="ES256 RS256 EdDSA"`
		if code == "use_dpop_nonce" {
			rs.mu.Lock()
			w.Header().Set("DPoP-Nonce", rs.nonce)
			rs.mu.Unlock()
		}
	}
	if code != "" {
		c += `, error="` + code + `", error_description="` + desc + `"`
	}
	w.Header().Set("WWW-Authenticate", c)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	body := map[string]string{"error": "unauthorized"}
	if code != "" {
		body = map[string]string{"error": code, "error_description": desc}
	}
	_ = json.NewEncoder(w).Encode(body)
}

// accessToken is the request's access token and its scheme, lower-cased:
// "bearer" (RFC 6750 §2.1) or "dpop" (RFC 9449 §7.1).
func accessToken(r *http.Request) (scheme, tok string, ok bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok = strings.Cut(h, " ")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "bearer" && scheme != "dpop") {
		return "", "", false
	}
	tok = strings.TrimSpace(tok)
	return scheme, tok, tok != ""
}

// introspection is what the resource server reads of an introspection answer.
type introspection struct {
	Active   bool   `json:"active"`
	Subject  string `json:"sub"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	Audience any    `json:"aud"` // one string or a list
	Cnf      struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

func (rs *ResourceServer) introspectToken(r *http.Request, tok string) (introspection, error) {
	rs.count("introspections")
	endpoint, err := rs.introspectionURL(r)
	if err != nil {
		return introspection{}, err
	}
	form := url.Values{"token": {tok}, "client_id": {rs.cfg.ClientID}, "client_secret": {rs.cfg.ClientSecret}}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return introspection{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := rs.client.Do(req)
	if err != nil {
		return introspection{}, errors.New("the authorization server could not be reached")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return introspection{}, fmt.Errorf("the authorization server answered introspection with HTTP %d", resp.StatusCode)
	}
	var info introspection
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return introspection{}, fmt.Errorf("introspection answer: %v", err)
	}
	return info, nil
}

// introspectionURL is the introspection endpoint, discovered once.
func (rs *ResourceServer) introspectionURL(r *http.Request) (string, error) {
	rs.mu.Lock()
	u := rs.introspect
	rs.mu.Unlock()
	if u != "" {
		return u, nil
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimRight(rs.cfg.Issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", err
	}
	resp, err := rs.client.Do(req)
	if err != nil {
		return "", errors.New("the authorization server's discovery could not be reached")
	}
	defer resp.Body.Close()
	var doc struct {
		Introspection string `json:"introspection_endpoint"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil || doc.Introspection == "" {
		return "", errors.New("the authorization server announces no introspection endpoint")
	}
	rs.mu.Lock()
	rs.introspect = doc.Introspection
	rs.mu.Unlock()
	return doc.Introspection, nil
}

// hostileBody is JSON whose strings carry terminal control sequences: clear
// screen, an OSC 52 clipboard write, a C1 CSI, a right-to-left override and
// a carriage return that would write over the start of its line.
const hostileBody = `{"name":"evil\u001b[2J\u001b[H","note":"copy\u001b]52;c;ZXZpbA==\u0007me","c1":"\u009b31mred","bidi":"\u202eesrever","bell":"\u0007","cr":"over\rwritten"}` + "\n"

// hostileRaw is hostileBody's sequences as raw bytes, as a careless or
// malicious server sends them.
const hostileRaw = "evil\x1b[2J\x1b[H copy\x1b]52;c;ZXZpbA==\x07me \u009b31mred \u202eesrever\x07 over\rwritten\n"

func writeLarge(w http.ResponseWriter, r *http.Request) {
	n := 2000
	if v, err := strconv.Atoi(r.URL.Query().Get("n")); err == nil && v >= 0 && v <= 1_000_000 {
		n = v
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "[")
	for i := range n {
		sep := ","
		if i == 0 {
			sep = ""
		}
		_, _ = fmt.Fprintf(w, `%s{"id":%d,"name":"shipment-%05d","status":"in_transit"}`, sep, i, i)
	}
	_, _ = io.WriteString(w, "]\n")
}

func writeBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil || n < 0 || n > 1<<32 {
		n = 1 << 20
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	chunk := make([]byte, 32<<10)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for n > 0 {
		m := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:m]); err != nil {
			return
		}
		n -= m
	}
}

// PageItem is an item of /test/pages: page P of per items holds the ids
// (P-1)*per to P*per-1.
type PageItem struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Page is the body of /test/pages?body: the items and where the next page
// is, as a cursor and as a path (both null on the last page).
type Page struct {
	Items  []PageItem `json:"items"`
	Cursor *string    `json:"next_cursor"`
	Next   *string    `json:"next"`
}

// writePaged answers /test/pages, a paged list: pages (default 3) pages of
// per (default 2) items; page (1-based, default 1) or cursor ("c"+page)
// picks one. The answer is a JSON array with RFC 8288 Link headers naming
// the next page (rel="next", an absolute URL) and the last, or with body
// set a Page whose next_cursor and next say where the next page is, with
// no Link header. The last page's next link is next=URL when given, or
// the first page with loop set.
func writePaged(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pages, per, page := pageNumbers(q)
	items := []PageItem{}
	if page >= 1 && page <= pages {
		for i := (page - 1) * per; i < page*per; i++ {
			items = append(items, PageItem{ID: i, Name: fmt.Sprintf("item-%03d", i)})
		}
	}
	at := func(p int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Del("cursor")
		v.Set("page", strconv.Itoa(p))
		return "http://" + r.Host + r.URL.Path + "?" + v.Encode()
	}
	next := ""
	switch {
	case page < pages:
		next = at(page + 1)
	case q.Get("next") != "":
		next = q.Get("next")
	case q.Has("loop"):
		next = at(1)
	}
	w.Header().Set("Content-Type", "application/json")
	if q.Has("body") {
		_ = json.NewEncoder(w).Encode(pageBody(items, next, page, pages))
		return
	}
	links := []string{}
	if next != "" {
		links = append(links, "<"+next+`>; rel="next"`)
	}
	links = append(links, "<"+at(pages)+`>; rel="last"`)
	w.Header().Set("Link", strings.Join(links, ", "))
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(items)
}

// pageNumbers are /test/pages' numbers from its query: pages (default 3),
// per (default 2) and the page asked for (default 1), by number or cursor.
func pageNumbers(q url.Values) (pages, per, page int) {
	num := func(name string, def int) int {
		if v, err := strconv.Atoi(q.Get(name)); err == nil && v >= 0 && v <= 100_000 {
			return v
		}
		return def
	}
	pages, per, page = num("pages", 3), num("per", 2), num("page", 1)
	if c, ok := strings.CutPrefix(q.Get("cursor"), "c"); ok {
		if v, err := strconv.Atoi(c); err == nil && v > 0 {
			page = v
		}
	}
	return pages, per, page
}

// pageBody is page's Page: its items and, unless next is "", the next
// page's cursor (the first after the last) and path.
func pageBody(items []PageItem, next string, page, pages int) Page {
	body := Page{Items: items}
	if next != "" {
		cursor := "c" + strconv.Itoa(page+1)
		if page >= pages {
			cursor = "c1"
		}
		body.Cursor, body.Next = &cursor, &next
	}
	return body
}
