package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The grants besides password and refresh: client credentials (a client's
// service account), the device authorization grant (RFC 8628) with an
// approval page, and the authorization code grant with PKCE (RFC 7636) and
// an authorization page. The pages are plain HTML forms that a person, a
// test or a scripted $BROWSER completes with the realm's username and
// password and an action of "approve" or "deny" (form fields username,
// password, action; the device page also user_code). Both pages accept the
// fields in one POST to the URL shipkey prints, so `curl -d` completes them.

// serviceAccountPrefix names a client's service account user, as Keycloak.
const serviceAccountPrefix = "service-account-"

// deviceAuth is one device authorization in flight.
type deviceAuth struct {
	deviceCode, userCode string
	clientID, scope      string
	expires              int64     // unix seconds, by the realm's clock
	lastPoll             time.Time // by the wall clock: slow_down is about load
	interval             int64
	state                string // "pending", "approved", "denied", "redeemed"
	username             string
	challenge            string // PKCE (S256) of the device authorization request
}

// authCode is one authorization code issued by the authorization page.
type authCode struct {
	clientID, redirectURI  string
	challenge, method      string
	scope, nonce, username string
	expires                int64
	dpopJKT                string // the authorization request's dpop_jkt
}

// defaultDeviceInterval is Keycloak's polling interval.
const defaultDeviceInterval = 5

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// userCode is eight letters from an alphabet without look-alikes, shown as
// ABCD-EFGH (RFC 8628 §6.1).
func userCode() string {
	const alphabet = "BCDFGHJKLMNPQRSTVWXZ"
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// newSession opens a user session for username and client. s.mu not held.
func (s *Server) newSession(username, clientID, scope, nonce string, bind binding) (userRecord, session, *oauthError) {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.lookupUser(username)
	if rec == nil || rec.Disabled {
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_grant", "Invalid user")
	}
	ss := &session{
		id: newUUID(), username: rec.Username, clientID: clientID, scope: scope, nonce: nonce,
		offline: strings.Contains(" "+scope+" ", " offline_access "),
		started: now, lastRefresh: now, redeemed: map[string]bool{}, bind: bind,
	}
	s.sessions[ss.id] = ss
	return *rec, *ss, nil
}

// issueFor opens a session for username and issues its first tokens; nonce
// goes into the ID token.
func (s *Server) issueFor(issuer, username, clientID, scope, nonce string, bind binding) (tokenResponse, *oauthError) {
	u, ss, e := s.newSession(username, clientID, scope, nonce, bind)
	if e != nil {
		return tokenResponse{}, e
	}
	resp, err := s.issue(issuer, u, ss, ss.started)
	if err != nil {
		return tokenResponse{}, errf(http.StatusInternalServerError, "server_error", "could not sign the token")
	}
	return resp, nil
}

// clientCredentialsGrant answers as Keycloak 12 and later do by default: an
// access token for the client's service account, no refresh token
// (refresh_expires_in 0).
func (s *Server) clientCredentialsGrant(form url.Values, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	if !client.isConfidential() {
		return tokenResponse{}, errf(http.StatusUnauthorized, "unauthorized_client", "Public client not allowed to retrieve service account")
	}
	if !client.ServiceAccount {
		return tokenResponse{}, errf(http.StatusUnauthorized, "unauthorized_client", "Client not enabled to retrieve service account")
	}
	scope, _, e := s.grantedScope(form.Get("scope"))
	if e != nil {
		return tokenResponse{}, e
	}
	resp, e := s.issueFor(issuer, serviceAccountPrefix+client.ID, client.ID, scope, "", bind)
	if e != nil {
		return tokenResponse{}, e
	}
	zero := int64(0)
	resp.RefreshToken, resp.RefreshExpiresIn, resp.IDToken = "", &zero, ""
	return resp, nil
}

// deviceAuthorization is RFC 8628 §3.1-3.2 at Keycloak's
// .../protocol/openid-connect/auth/device.
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request, issuer string) {
	form, client, e := s.clientForm(r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	if !client.DeviceGrant {
		s.writeError(w, errf(http.StatusBadRequest, "unauthorized_client", "Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for the client."))
		return
	}
	scope, _, e := s.grantedScope(form.Get("scope"))
	if e != nil {
		s.writeError(w, e)
		return
	}
	challenge, method := form.Get("code_challenge"), form.Get("code_challenge_method")
	switch {
	case client.DevicePKCE && method == "":
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Missing parameter: code_challenge_method"))
		return
	case challenge != "" && method != "S256":
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Invalid parameter: code challenge method is not configured one"))
		return
	case method != "" && challenge == "":
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Missing parameter: code_challenge"))
		return
	}
	interval := int64(defaultDeviceInterval)
	if s.opts.DeviceInterval > 0 {
		interval = wholeSeconds(s.opts.DeviceInterval)
	}
	d := &deviceAuth{
		deviceCode: randomToken(32), userCode: userCode(), clientID: client.ID, scope: scope,
		expires: s.now().Unix() + 600, interval: interval, state: "pending", challenge: challenge,
	}
	s.mu.Lock()
	s.devices[d.deviceCode] = d
	s.mu.Unlock()
	verify := issuer + "/device"
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code":               d.deviceCode,
		"user_code":                 d.userCode,
		"verification_uri":          verify,
		"verification_uri_complete": verify + "?user_code=" + url.QueryEscape(d.userCode),
		"expires_in":                600,
		"interval":                  interval,
	})
}

// deviceCodeGrant is RFC 8628 §3.4-3.5: the client polls.
func (s *Server) deviceCodeGrant(form url.Values, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	code := form.Get("device_code")
	now := s.now().Unix()
	s.mu.Lock()
	d, ok := s.devices[code]
	if !ok || d.clientID != client.ID {
		s.mu.Unlock()
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Device code not valid")
	}
	if now >= d.expires {
		delete(s.devices, code)
		s.mu.Unlock()
		return tokenResponse{}, errf(http.StatusBadRequest, "expired_token", "Device code is expired")
	}
	wall := time.Now()
	tooSoon := !d.lastPoll.IsZero() && wall.Sub(d.lastPoll) < time.Duration(d.interval)*time.Second-50*time.Millisecond
	d.lastPoll = wall
	switch d.state {
	case "denied":
		delete(s.devices, code)
		s.mu.Unlock()
		return tokenResponse{}, errf(http.StatusBadRequest, "access_denied", "The end user denied the authorization request")
	case "pending":
		if tooSoon {
			d.interval += 5
			s.mu.Unlock()
			return tokenResponse{}, errf(http.StatusBadRequest, "slow_down", "Slow down")
		}
		s.mu.Unlock()
		return tokenResponse{}, errf(http.StatusBadRequest, "authorization_pending", "The authorization request is still pending")
	case "redeemed":
		s.mu.Unlock()
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Device code already used")
	}
	if e := checkPKCE(d.challenge, form.Get("code_verifier")); e != nil {
		s.mu.Unlock()
		return tokenResponse{}, e
	}
	d.state = "redeemed"
	username, scope := d.username, d.scope
	s.mu.Unlock()
	return s.issueFor(issuer, username, client.ID, scope, "", bind)
}

type page struct {
	Title, Message, Action, UserCode string
	Form, AskCode                    bool
	Hidden                           map[string]string
}

func writePage(w http.ResponseWriter, status int, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, p.html())
}

// html is the page, every value escaped. (Written out rather than with
// html/template, whose package initialisation every shipkey process, which
// links this server for its demo, would pay.)
func (p page) html() string {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body>\n<h1>%s</h1>\n", e(p.Title), e(p.Title))
	if p.Message != "" {
		fmt.Fprintf(&b, "<p id=\"message\">%s</p>\n", e(p.Message))
	}
	if p.Form {
		fmt.Fprintf(&b, "<form method=\"post\" action=\"%s\">\n", e(p.Action))
		for _, k := range slices.Sorted(maps.Keys(p.Hidden)) {
			fmt.Fprintf(&b, "<input type=\"hidden\" name=\"%s\" value=\"%s\">\n", e(k), e(p.Hidden[k]))
		}
		if p.AskCode {
			fmt.Fprintf(&b, "<label>Code <input name=\"user_code\" value=\"%s\"></label><br>\n", e(p.UserCode))
		}
		b.WriteString("<label>Username <input name=\"username\"></label><br>\n" +
			"<label>Password <input name=\"password\" type=\"password\"></label><br>\n" +
			"<button name=\"action\" value=\"approve\">Sign in and allow</button>\n" +
			"<button name=\"action\" value=\"deny\">Deny</button>\n</form>")
	}
	b.WriteString("\n</body></html>\n")
	return b.String()
}

// checkUser checks a page's username and password. s.mu not held.
func (s *Server) checkUser(username, password string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.lookupUser(username)
	return rec != nil && !rec.Disabled && !strings.HasPrefix(rec.Username, serviceAccountPrefix) &&
		subtle.ConstantTimeCompare([]byte(password), []byte(rec.Password)) == 1
}

// devicePage is the verification URI: GET shows the form, POST approves or
// denies the user code.
func (s *Server) devicePage(w http.ResponseWriter, r *http.Request, issuer string) {
	_ = r.ParseForm()
	code := strings.ToUpper(strings.TrimSpace(r.Form.Get("user_code")))
	p := page{Title: "Device login", Action: issuer + "/device", UserCode: code, Form: true, AskCode: true}
	if r.Method == http.MethodGet || r.Form.Get("action") == "" {
		writePage(w, http.StatusOK, p)
		return
	}
	s.mu.Lock()
	var d *deviceAuth
	for _, v := range s.devices {
		if v.userCode == code && v.state == "pending" {
			d = v
		}
	}
	s.mu.Unlock()
	if d == nil {
		p.Message = "That code is not valid or has expired."
		writePage(w, http.StatusBadRequest, p)
		return
	}
	if r.Form.Get("action") != "approve" {
		s.mu.Lock()
		d.state = "denied"
		s.mu.Unlock()
		writePage(w, http.StatusOK, page{Title: "Device login", Message: "Access denied. You can close this window."})
		return
	}
	if !s.checkUser(r.Form.Get("username"), r.Form.Get("password")) {
		p.Message = "Invalid username or password."
		writePage(w, http.StatusUnauthorized, p)
		return
	}
	s.mu.Lock()
	d.state, d.username = "approved", strings.ToLower(r.Form.Get("username"))
	s.mu.Unlock()
	writePage(w, http.StatusOK, page{Title: "Device login", Message: "Device login successful. You can close this window."})
}

// redirectAllowed reports whether uri may receive client's codes: one of
// its RedirectURIs, or, when it registered none, any http loopback URI
// (RFC 8252 §7.3: the port is the client's choice).
func redirectAllowed(c Client, uri string) bool {
	if len(c.RedirectURIs) > 0 {
		for _, u := range c.RedirectURIs {
			if u == uri {
				return true
			}
		}
		return false
	}
	u, err := url.Parse(uri)
	return err == nil && u.Scheme == "http" && (u.Hostname() == "127.0.0.1" || u.Hostname() == "::1" || u.Hostname() == "localhost") && u.RawQuery == "" && u.Fragment == ""
}

// authorizePage is the authorization endpoint: GET shows the login form
// for the request in its query; POST (the form, or the query plus
// username, password and action) answers with a redirect to the client.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request, issuer string) {
	_ = r.ParseForm()
	client, q, ok := s.authorizeRequest(w, r, issuer)
	if !ok {
		return
	}
	requestURI := r.Form.Get("request_uri")
	redirect := q.Get("redirect_uri")
	back := func(params url.Values) {
		params.Set("state", q.Get("state"))
		params.Set("iss", issuer)
		http.Redirect(w, r, redirect+"?"+params.Encode(), http.StatusFound)
	}
	for _, check := range authorizeChecks {
		if check.broken(q, client) {
			back(url.Values{"error": {check.code}, "error_description": {check.desc}})
			return
		}
	}
	scope, _, e := s.grantedScope(q.Get("scope"))
	if e != nil {
		back(url.Values{"error": {"invalid_scope"}, "error_description": {e.desc}})
		return
	}
	if r.Method == http.MethodGet || q.Get("action") == "" {
		s.loginPage(w, q, client, requestURI, issuer)
		return
	}
	if q.Get("action") != "approve" {
		s.dropPAR(requestURI)
		back(url.Values{"error": {"access_denied"}, "error_description": {"The end user denied the request"}})
		return
	}
	if !s.checkUser(q.Get("username"), q.Get("password")) {
		writePage(w, http.StatusUnauthorized, page{Title: "Sign in to " + s.realm, Message: "Invalid username or password."})
		return
	}
	code := randomToken(32)
	s.mu.Lock()
	s.codes[code] = &authCode{
		clientID: client.ID, redirectURI: redirect, challenge: q.Get("code_challenge"), method: q.Get("code_challenge_method"),
		scope: scope, nonce: q.Get("nonce"), username: strings.ToLower(q.Get("username")), expires: s.now().Unix() + 60,
		dpopJKT: q.Get("dpop_jkt"),
	}
	s.mu.Unlock()
	s.dropPAR(requestURI)
	back(url.Values{"code": {code}})
}

// authorizeRequest is the authorization request's client and parameters
// (those pushed, for a request_uri) with a redirect URI the client
// registered; it answers a bad request itself (ok false).
func (s *Server) authorizeRequest(w http.ResponseWriter, r *http.Request, issuer string) (_ Client, _ url.Values, ok bool) {
	q := r.Form
	s.mu.Lock()
	client, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !ok || client.Disabled {
		writePage(w, http.StatusBadRequest, page{Title: "Sign in", Message: "Client not found."})
		return Client{}, nil, false
	}
	pushed, e := s.pushedParams(q, client)
	if e != nil {
		if q.Get("request_uri") == "" && redirectAllowed(client, q.Get("redirect_uri")) {
			redirectError(w, r, q.Get("redirect_uri"), q.Get("state"), issuer, e)
			return Client{}, nil, false
		}
		writePage(w, http.StatusBadRequest, page{Title: "Sign in", Message: e.desc})
		return Client{}, nil, false
	}
	if !redirectAllowed(client, pushed.Get("redirect_uri")) {
		writePage(w, http.StatusBadRequest, page{Title: "Sign in", Message: "Invalid parameter: redirect_uri"})
		return Client{}, nil, false
	}
	return client, pushed, true
}

// authorizeChecks are what an authorization request must be for its
// client, in order: the first broken is sent back to the client as its
// error code and description.
var authorizeChecks = []struct {
	broken     func(q url.Values, c Client) bool
	code, desc string
}{
	{func(q url.Values, _ Client) bool { return q.Get("response_type") != "code" },
		"unsupported_response_type", "Unsupported response_type"},
	{func(_ url.Values, c Client) bool { return c.NoStandardFlow },
		"unauthorized_client", "Client is not allowed to initiate browser login with given response_type. Standard flow is disabled for the client."},
	{func(q url.Values, c Client) bool { return q.Get("code_challenge") == "" && c.Secret == "" },
		"invalid_request", "Missing parameter: code_challenge_method"},
	{func(q url.Values, _ Client) bool {
		return q.Get("code_challenge") != "" && q.Get("code_challenge_method") != "S256"
	}, "invalid_request", "Invalid parameter: code challenge method is not configured one"},
}

// loginPage shows the login form for the request q (client's), carrying its
// parameters, or for a pushed request only its request_uri.
func (s *Server) loginPage(w http.ResponseWriter, q url.Values, client Client, requestURI, issuer string) {
	hidden := map[string]string{}
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "scope", "nonce", "code_challenge", "code_challenge_method", "dpop_jkt"} {
		if v := q.Get(k); v != "" {
			hidden[k] = v
		}
	}
	if requestURI != "" { // the pushed request, not its parameters
		hidden = map[string]string{"client_id": client.ID, "request_uri": requestURI}
	}
	writePage(w, http.StatusOK, page{Title: "Sign in to " + s.realm, Action: issuer + "/protocol/openid-connect/auth", Form: true, Hidden: hidden})
}

// authorizationCodeGrant redeems a code: once, by the client it was issued
// to, with the same redirect_uri, and with the PKCE verifier when a
// challenge was sent.
func (s *Server) authorizationCodeGrant(form url.Values, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	code := form.Get("code")
	s.mu.Lock()
	c, ok := s.codes[code]
	delete(s.codes, code) // single use, whatever happens next
	s.mu.Unlock()
	switch {
	case !ok:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Code not valid")
	case s.now().Unix() >= c.expires:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Code not valid")
	case c.clientID != client.ID:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Auth error")
	case c.redirectURI != form.Get("redirect_uri"):
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Incorrect redirect_uri")
	case c.dpopJKT != "" && bind.jkt != c.dpopJKT:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_dpop_proof", "DPoP Proof public key thumbprint does not match dpop_jkt")
	}
	if e := checkPKCE(c.challenge, form.Get("code_verifier")); e != nil {
		return tokenResponse{}, e
	}
	return s.issueFor(issuer, c.username, client.ID, c.scope, c.nonce, bind)
}

// checkPKCE checks a code_verifier against the S256 challenge of the
// request that started the grant (none: nothing to check).
func checkPKCE(challenge, verifier string) *oauthError {
	if challenge == "" {
		return nil
	}
	if verifier == "" {
		return errf(http.StatusBadRequest, "invalid_grant", "PKCE code verifier not specified")
	}
	sum := sha256.Sum256([]byte(verifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) != 1 {
		return errf(http.StatusBadRequest, "invalid_grant", "PKCE verification failed: Invalid code verifier")
	}
	return nil
}

// redirectError sends an authorization error back to the client's redirect URI.
func redirectError(w http.ResponseWriter, r *http.Request, redirect, state, issuer string, e *oauthError) {
	params := url.Values{"error": {e.code}, "error_description": {e.desc}, "state": {state}, "iss": {issuer}}
	http.Redirect(w, r, redirect+"?"+params.Encode(), http.StatusFound)
}
