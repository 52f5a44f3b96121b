package authtest

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// grantDeviceCode is RFC 8628's grant_type.
const grantDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"

// maxForm bounds a request body the server reads.
const maxForm = 1 << 20

// builtinScopes are the client scopes the realm knows besides Config.Scope.
var builtinScopes = []string{"openid", "email", "profile", "write", "offline_access", "roles"}

// oauthError is an error answer: status plus Keycloak's JSON body. An empty
// code means no body (a bare challenge).
type oauthError struct {
	status          int
	code, desc      string
	wwwAuthenticate string
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	const base = "/auth/realms/{realm}"
	const oidc = base + "/protocol/openid-connect"
	get, post := http.MethodGet, http.MethodPost
	if s.opts.DiscoveryBesideToken {
		mux.Handle(oidc+"/.well-known/openid-configuration", s.endpoint("discovery", s.discovery, get))
		mux.Handle(base+"/.well-known/openid-configuration", s.endpoint("discovery", notFound, get))
	} else {
		mux.Handle(base+"/.well-known/openid-configuration", s.endpoint("discovery", s.discovery, get))
	}
	mux.Handle(oidc+"/token", s.endpoint("token", s.token, post))
	mux.Handle(oidc+"/auth/device", s.endpoint("device", s.deviceAuthorization, post))
	mux.Handle(base+"/device", s.endpoint("device-page", s.devicePage, get, post))
	mux.Handle(oidc+"/auth", s.endpoint("authorize", s.authorizePage, get, post))
	mux.Handle(oidc+"/ext/par/request", s.endpoint("par", s.par, post))
	// An endpoint a profile removes answers 404 at Keycloak's path, and
	// requests to it are still counted under its name.
	introspect, logout := s.introspect, s.logout
	if s.opts.NoIntrospection {
		introspect = notFound
	}
	if s.opts.NoLogout {
		logout = notFound
	}
	mux.Handle(oidc+"/token/introspect", s.endpoint("introspect", introspect, post))
	mux.Handle(base+s.jwksPath(), s.endpoint("certs", s.certs, get))
	if s.opts.JWKSPath != "" {
		mux.Handle(oidc+"/certs", s.endpoint("certs", notFound, get))
	}
	mux.Handle(oidc+"/logout", s.endpoint("logout", logout, post))
	mux.Handle(oidc+"/userinfo", s.endpoint("userinfo", s.userinfo, get, post))
	mux.Handle(base+s.revocationPath(), s.endpoint("revoke", s.revoke, post))
	if s.opts.RevocationPath != "" {
		mux.Handle(oidc+"/revoke", s.endpoint("revoke", notFound, post))
	}
	if s.external != nil {
		s.externalRoutes(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{
			"error":             "Unable to find matching target resource method",
			"error_description": "For more on this error consult the server log.",
		})
	})
	return mux
}

// notFound is the answer of an endpoint a profile removed.
func notFound(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "Unable to find matching target resource method"})
}

// jwksPath is where the key set is served, below the realm's base path.
func (s *Server) jwksPath() string {
	if s.opts.JWKSPath != "" {
		return "/" + strings.TrimLeft(s.opts.JWKSPath, "/")
	}
	return "/protocol/openid-connect/certs"
}

// revocationPath is where RFC 7009 revocation is served, below the realm's
// base path.
func (s *Server) revocationPath() string {
	if s.opts.RevocationPath != "" {
		return "/" + strings.TrimLeft(s.opts.RevocationPath, "/")
	}
	return "/protocol/openid-connect/revoke"
}

// endpoint wraps a handler with counting, faults, the realm check and the
// method check. h gets the issuer as seen from the request's Host.
func (s *Server) endpoint(name string, h func(http.ResponseWriter, *http.Request, string), methods ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		grant := ""
		if name == "token" && r.Method == http.MethodPost && isForm(r) && r.ParseForm() == nil {
			grant = r.PostForm.Get("grant_type")
		}
		s.count(name, grant)
		if f, ok := s.nextFault(name); ok && applyFault(w, r, f) {
			return
		}
		if r.PathValue("realm") != s.realm {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Realm does not exist"})
			return
		}
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "HTTP 405 Method Not Allowed"})
			return
		}
		h(w, r, s.issuerFor(r))
	})
}

func isForm(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/x-www-form-urlencoded"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) writeError(w http.ResponseWriter, e *oauthError) {
	if e.wwwAuthenticate != "" {
		w.Header().Set("WWW-Authenticate", e.wwwAuthenticate)
	}
	if e.code == "" || s.opts.ErrorBodies == ErrorBodiesEmpty {
		w.WriteHeader(e.status)
		return
	}
	if s.opts.ErrorBodies == ErrorBodiesText {
		msg := http.StatusText(e.status)
		if e.status == http.StatusUnauthorized || e.status == http.StatusForbidden {
			msg = "Access denied"
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(e.status)
		_, _ = w.Write([]byte(msg + "\n"))
		return
	}
	body := map[string]string{"error": e.code}
	if e.desc != "" {
		body["error_description"] = e.desc
	}
	writeJSON(w, e.status, body)
}

func errf(status int, code, desc string) *oauthError {
	return &oauthError{status: status, code: code, desc: desc}
}

// readForm returns the POST form, refusing other content types and
// duplicated parameters as Keycloak does.
func readForm(r *http.Request) (url.Values, *oauthError) {
	if !isForm(r) {
		return nil, errf(http.StatusBadRequest, "invalid_request", "Content-Type must be application/x-www-form-urlencoded")
	}
	if err := r.ParseForm(); err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_request", "Malformed form body")
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			return nil, errf(http.StatusBadRequest, "invalid_request", "duplicated parameter: "+k)
		}
	}
	return r.PostForm, nil
}

// authenticateClient follows Keycloak's client-secret authenticator: HTTP
// Basic (RFC 6749 form-encoded) or client_id/client_secret in the form, the
// form winning when both are present.
// clientForm reads a form POST and authenticates its client: the start of
// every endpoint but the token grants, which check grant_type in between.
func (s *Server) clientForm(r *http.Request) (url.Values, Client, *oauthError) {
	form, e := readForm(r)
	if e != nil {
		return nil, Client{}, e
	}
	client, e := s.authenticateClient(r, form)
	if e != nil {
		return nil, Client{}, e
	}
	return form, client, nil
}

func (s *Server) authenticateClient(r *http.Request, form url.Values) (Client, *oauthError) {
	if form.Has("client_assertion") || form.Has("client_assertion_type") {
		return s.jwtClient(r, form)
	}
	cred, e := s.presentedCredentials(r, form)
	if e != nil {
		return Client{}, e
	}
	s.mu.Lock()
	c, ok := s.clients[cred.id]
	s.mu.Unlock()
	if !ok || c.Disabled {
		return Client{}, errf(http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
	}
	switch c.AuthMethod {
	case AuthPrivateKeyJWT, AuthClientSecretJWT:
		return Client{}, errf(http.StatusBadRequest, "invalid_client", "Parameter client_assertion_type is missing")
	case AuthTLSClient, AuthSelfSignedTLS:
		return s.tlsClient(r, c)
	}
	if c.Secret == "" { // public client
		return c, nil
	}
	if !cred.haveSecret || subtle.ConstantTimeCompare([]byte(cred.secret), []byte(c.Secret)) != 1 {
		return Client{}, errf(http.StatusUnauthorized, "unauthorized_client", "Invalid client or Invalid client credentials")
	}
	return c, nil
}

// credentials are the client id and secret a request presents.
type credentials struct {
	id, secret string
	haveSecret bool
}

// presentedCredentials are the client's id and secret from HTTP Basic or
// the form (the form's win); a client id is required.
func (s *Server) presentedCredentials(r *http.Request, form url.Values) (credentials, *oauthError) {
	var cred credentials
	haveID := false
	if h := r.Header.Get("Authorization"); h != "" {
		if u, p, ok := parseBasic(h); ok {
			cred, haveID = credentials{id: u, secret: p, haveSecret: true}, true
		} else if !form.Has("client_id") {
			return credentials{}, &oauthError{status: http.StatusUnauthorized, wwwAuthenticate: `Basic realm="` + s.realm + `"`}
		}
	}
	if form.Has("client_id") {
		cred.id, haveID = form.Get("client_id"), true
	}
	if form.Has("client_secret") {
		cred.secret, cred.haveSecret = form.Get("client_secret"), true
	}
	if !haveID {
		return credentials{}, errf(http.StatusBadRequest, "invalid_client", "Missing client_id parameter")
	}
	return cred, nil
}

func parseBasic(h string) (user, pass string, ok bool) {
	const prefix = "basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return "", "", false
	}
	u, p, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false
	}
	if user, err = url.QueryUnescape(u); err != nil {
		return "", "", false
	}
	if pass, err = url.QueryUnescape(p); err != nil {
		return "", "", false
	}
	return user, pass, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, issuer string) {
	form, e := readForm(r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	grant := form.Get("grant_type")
	if grant == grantTokenExchange && s.opts.NoTokenExchange {
		grant = "unsupported"
	}
	serve, known := tokenGrants[grant]
	switch {
	case grant == "":
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Missing form parameter: grant_type"))
		return
	case !known:
		s.writeError(w, errf(http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant_type"))
		return
	}
	g := grantRequest{form: form, r: r, issuer: issuer}
	if g.client, e = s.tokenClient(r, form); e != nil {
		s.writeError(w, e)
		return
	}
	if g.bind, e = s.tokenBinding(w, r, g.client); e != nil {
		s.writeError(w, e)
		return
	}
	resp, e := serve(s, g)
	if e != nil {
		s.writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// grantRequest is a token request to a grant: its form, the client it
// authenticated and what its tokens are to be bound to.
type grantRequest struct {
	form   url.Values
	r      *http.Request
	client Client
	issuer string
	bind   binding
}

// tokenGrants are the grants the token endpoint serves, by grant_type.
var tokenGrants = map[string]func(s *Server, g grantRequest) (tokenResponse, *oauthError){
	"password": func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.passwordGrant(g.form, g.client, g.issuer, g.bind)
	},
	"client_credentials": func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.clientCredentialsGrant(g.form, g.client, g.issuer, g.bind)
	},
	grantDeviceCode: func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.deviceCodeGrant(g.form, g.client, g.issuer, g.bind)
	},
	"authorization_code": func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.authorizationCodeGrant(g.form, g.client, g.issuer, g.bind)
	},
	grantTokenExchange: func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.tokenExchangeGrant(g.form, g.client, g.issuer)
	},
	jwtBearerGrant: func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.jwtBearerGrantFor(g.form, g.r, g.client, g.issuer, g.bind)
	},
	"refresh_token": func(s *Server, g grantRequest) (tokenResponse, *oauthError) {
		return s.refreshGrant(g.form, g.client, g.issuer, g.bind)
	},
}

// tokenClient authenticates the client of a token request, refusing the
// form's client_secret for a client that takes Basic only.
func (s *Server) tokenClient(r *http.Request, form url.Values) (Client, *oauthError) {
	client, e := s.authenticateClient(r, form)
	if e == nil && client.TokenBasicOnly && form.Has("client_secret") {
		e = errf(http.StatusUnauthorized, "invalid_client", "Client authentication with client_secret_post is not allowed for this client")
	}
	return client, e
}

// tokenBinding is what the tokens of client's request are bound to: its
// certificate (RFC 8705 §3) and its DPoP proof's key; the answer carries
// the current DPoP nonce.
func (s *Server) tokenBinding(w http.ResponseWriter, r *http.Request, client Client) (binding, *oauthError) {
	var bind binding
	if client.AuthMethod == AuthTLSClient || client.AuthMethod == AuthSelfSignedTLS {
		bind.x5t = certThumbprint(r) // certificate-bound tokens (RFC 8705 §3)
	}
	var e *oauthError
	if bind.jkt, e = s.dpopProof(w, r, client); e != nil {
		return binding{}, e
	}
	if n := s.currentDPoPNonce(); n != "" {
		w.Header().Set("DPoP-Nonce", n)
	}
	return bind, nil
}

// grantedScope checks a requested scope and returns what is granted: openid
// first when requested, the realm's default scopes, then the other requested
// scopes ("roles" is never listed, as in Keycloak).
func (s *Server) grantedScope(requested string) (string, bool, *oauthError) {
	words := strings.Fields(requested)
	for _, w := range words {
		if !slices.Contains(builtinScopes, w) && !slices.Contains(s.defaultScope, w) {
			return "", false, errf(http.StatusBadRequest, "invalid_scope", "Invalid scopes: "+requested)
		}
	}
	var granted []string
	if slices.Contains(words, "openid") {
		granted = append(granted, "openid")
	}
	for _, w := range append(slices.Clone(s.defaultScope), words...) {
		if w != "roles" && !slices.Contains(granted, w) {
			granted = append(granted, w)
		}
	}
	return strings.Join(granted, " "), slices.Contains(words, "offline_access"), nil
}

func (s *Server) passwordGrant(form url.Values, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	if client.NoDirectAccessGrant {
		return tokenResponse{}, errf(http.StatusBadRequest, "unauthorized_client", "Client not allowed for direct access grants")
	}
	if s.opts.RequireScope && strings.TrimSpace(form.Get("scope")) == "" {
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_request", "Missing parameter: scope")
	}
	scope, offline, e := s.grantedScope(form.Get("scope"))
	if e != nil {
		return tokenResponse{}, e
	}
	username := form.Get("username")
	if username == "" {
		return tokenResponse{}, errf(http.StatusUnauthorized, "invalid_request", "Missing parameter: username")
	}
	invalidCreds := "Invalid user credentials"
	now := s.now().Unix()

	s.mu.Lock()
	rec := s.lookupUser(username)
	var u userRecord
	if rec != nil {
		u = *rec
	}
	s.mu.Unlock()
	switch {
	case rec == nil:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", invalidCreds)
	case u.Disabled:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Account disabled")
	case !form.Has("password") || subtle.ConstantTimeCompare([]byte(form.Get("password")), []byte(u.Password)) != 1:
		return tokenResponse{}, errf(http.StatusUnauthorized, "invalid_grant", invalidCreds)
	case u.RequiredActions:
		return tokenResponse{}, errf(http.StatusBadRequest, "invalid_grant", "Account is not fully set up")
	case offline && !slices.Contains(u.RealmRoles, "offline_access"):
		return tokenResponse{}, errf(http.StatusBadRequest, "not_allowed", "Offline tokens not allowed for the user or client")
	}

	ss := &session{
		id: newUUID(), username: u.Username, clientID: client.ID, scope: scope, offline: offline,
		started: now, lastRefresh: now, redeemed: map[string]bool{}, bind: bind,
	}
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	resp, err := s.issue(issuer, u, *ss, now)
	if err != nil {
		return tokenResponse{}, errf(http.StatusInternalServerError, "server_error", "could not sign the token")
	}
	return resp, nil
}

// lookupUser finds a user by username or, like Keycloak, by email. s.mu held.
func (s *Server) lookupUser(name string) *userRecord {
	name = strings.ToLower(name)
	if u, ok := s.users[name]; ok {
		return u
	}
	for _, u := range s.users {
		if u.Email != "" && strings.EqualFold(u.Email, name) {
			return u
		}
	}
	return nil
}

// aliveLocked reports whether ss is alive at unix second now: not ended and,
// unless offline or without expiry, refreshed within the idle timeout. s.mu held.
func (s *Server) aliveLocked(ss *session, now int64) bool {
	if ss == nil {
		return false
	}
	if ss.offline || s.refreshSecs <= 0 {
		return true
	}
	return now <= ss.lastRefresh+s.refreshSecs
}

func (s *Server) refreshGrant(form url.Values, client Client, issuer string, bind binding) (tokenResponse, *oauthError) {
	now := s.now().Unix()
	p, e := s.checkRefresh(form, client, now)
	if e != nil {
		return tokenResponse{}, e
	}
	u, sc, e := s.refreshSession(p, bind, now)
	if e != nil {
		return tokenResponse{}, e
	}
	resp, err := s.issue(issuer, u, sc, now)
	if err != nil {
		return tokenResponse{}, errf(http.StatusInternalServerError, "server_error", "could not sign the token")
	}
	if s.opts.NoRefreshRotation {
		resp.RefreshToken, resp.RefreshExpiresIn = "", nil
		s.mu.Lock()
		s.lastRT = form.Get("refresh_token")
		s.mu.Unlock()
	}
	return resp, nil
}

// checkRefresh checks a refresh request's token (present, valid, active at
// unix second now, client's) and the scope it asks for.
func (s *Server) checkRefresh(form url.Values, client Client, now int64) (*parsedToken, *oauthError) {
	raw := form.Get("refresh_token")
	if raw == "" {
		return nil, errf(http.StatusBadRequest, "invalid_request", "Missing form parameter: refresh_token")
	}
	p, err := s.parseRefresh(raw)
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "Invalid refresh token")
	}
	if p.expiredAt(now) {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "Token is not active")
	}
	if p.Azp != client.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "Invalid refresh token. Token client and authorized client don't match")
	}
	if form.Has("scope") {
		if _, _, e := s.grantedScope(form.Get("scope")); e != nil {
			return nil, e
		}
	}
	return p, nil
}

// refreshSession is the user and session a refresh token p of a live
// session renews at unix second now, with the request's binding: the
// session's binding kept (a DPoP key learnt), the token redeemed when
// tokens rotate. It returns copies.
func (s *Server) refreshSession(p *parsedToken, bind binding, now int64) (userRecord, session, *oauthError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[p.Sid]
	if !s.aliveLocked(ss, now) {
		delete(s.sessions, p.Sid)
		desc := "Session not active"
		if p.Typ == "Offline" {
			desc = "Offline session not active"
		}
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_grant", desc)
	}
	rec := s.users[ss.username]
	if rec == nil || rec.Disabled {
		return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_grant", "User disabled")
	}
	if e := ss.bind.check(bind); e != nil {
		return userRecord{}, session{}, e
	}
	if bind.jkt != "" {
		ss.bind.jkt = bind.jkt
	}
	if s.rotate {
		if ss.redeemed[p.Jti] {
			delete(s.sessions, ss.id)
			return userRecord{}, session{}, errf(http.StatusBadRequest, "invalid_grant", "Maximum allowed refresh token reuse exceeded")
		}
		ss.redeemed[p.Jti] = true
	}
	ss.lastRefresh = now
	return *rec, *ss, nil
}

// check checks a refresh request's binding (got) against the session's
// (b): the same certificate, and a DPoP proof by the same key.
func (b binding) check(got binding) *oauthError {
	switch {
	case b.x5t != "" && got.x5t != b.x5t:
		return errf(http.StatusUnauthorized, "unauthorized_client", "Client certificate missing, or its thumbprint and one in the refresh token did NOT match")
	case b.jkt != "" && got.jkt == "":
		return errf(http.StatusBadRequest, "invalid_request", "DPoP proof is missing")
	case b.jkt != "" && got.jkt != b.jkt:
		return errf(http.StatusBadRequest, "invalid_dpop_proof", "DPoP proof public key thumbprint does not match the refresh token's")
	}
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ string) {
	form, client, e := s.clientForm(r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	raw := form.Get("refresh_token")
	if raw == "" {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "No refresh token"))
		return
	}
	p, err := s.parseRefresh(raw) // expiry is not checked here, as in Keycloak
	if err != nil {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_grant", "Invalid refresh token"))
		return
	}
	if p.Azp != client.ID {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_grant", "Invalid refresh token. Token client and authorized client don't match"))
		return
	}
	s.mu.Lock()
	delete(s.sessions, p.Sid)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request, _ string) {
	form, client, e := s.clientForm(r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	tok := form.Get("token")
	if tok == "" {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Token not provided"))
		return
	}
	if p, err := s.parseRefresh(tok); err == nil {
		if p.Azp == client.ID {
			s.mu.Lock()
			delete(s.sessions, p.Sid)
			s.mu.Unlock()
		}
	} else if p, err := s.parseAccess(tok); err == nil && p.Azp == client.ID {
		s.mu.Lock()
		s.revoked[p.Jti] = true
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

// liveToken verifies tok (access or refresh) and reports whether the realm
// still accepts it at the current time, with the user it belongs to.
func (s *Server) liveToken(tok string) (*parsedToken, *userRecord, bool) {
	p, err := s.parseAccess(tok)
	if err != nil {
		if p, err = s.parseRefresh(tok); err != nil {
			return nil, nil, false
		}
	}
	now := s.now().Unix()
	if p.expiredAt(now) {
		return p, nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[p.Sid]
	if !s.aliveLocked(ss, now) || s.revoked[p.Jti] {
		return p, nil, false
	}
	rec := s.users[ss.username]
	if rec == nil || rec.Disabled {
		return p, nil, false
	}
	u := *rec
	return p, &u, true
}

func (s *Server) introspect(w http.ResponseWriter, r *http.Request, _ string) {
	form, _, e := s.clientForm(r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	tok := form.Get("token")
	if tok == "" {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Token not provided."))
		return
	}
	p, u, ok := s.liveToken(tok)
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	out := make(map[string]any, len(p.raw)+4)
	for k, v := range p.raw {
		out[k] = v
	}
	out["client_id"] = p.Azp
	out["username"] = u.Username
	out["token_type"] = p.Typ
	out["active"] = true
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) userinfo(w http.ResponseWriter, r *http.Request, _ string) {
	tok, scheme := presentedToken(r)
	if tok == "" {
		s.writeError(w, errf(http.StatusBadRequest, "invalid_request", "Token not provided"))
		return
	}
	p, err := s.parseAccess(tok)
	if err != nil || p.Typ != "Bearer" || p.expiredAt(s.now().Unix()) {
		s.writeError(w, s.bearerChallenge("invalid_token", "Token verification failed"))
		return
	}
	if e := s.checkBoundToken(r, p, tok, scheme); e != nil {
		s.writeError(w, e)
		return
	}
	_, u, ok := s.liveToken(tok)
	if !ok {
		s.writeError(w, s.bearerChallenge("invalid_token", "Session expired"))
		return
	}
	scopes := strings.Fields(p.Scope)
	if s.opts.UserinfoRequiresOpenID && !slices.Contains(scopes, "openid") {
		s.writeError(w, s.bearerChallenge("insufficient_scope", "Missing openid scope"))
		return
	}
	out := userClaims(*u, scopes)
	out["sub"] = p.Sub
	writeJSON(w, http.StatusOK, out)
}

// presentedToken is the access token a request carries and the scheme it
// came by: the Authorization header's (Bearer or DPoP), else a form
// body's access_token (scheme "").
func presentedToken(r *http.Request) (tok, scheme string) {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		tok, scheme = strings.TrimSpace(h[7:]), "Bearer"
	} else if len(h) > 5 && strings.EqualFold(h[:5], "dpop ") {
		tok, scheme = strings.TrimSpace(h[5:]), "DPoP"
	}
	if tok == "" && r.Method == http.MethodPost && isForm(r) && r.ParseForm() == nil {
		tok = r.PostForm.Get("access_token")
	}
	return tok, scheme
}

// bearerChallenge is a 401 with a Bearer challenge naming code and desc.
func (s *Server) bearerChallenge(code, desc string) *oauthError {
	return &oauthError{status: http.StatusUnauthorized, code: code, desc: desc,
		wwwAuthenticate: `Bearer realm="` + s.realm + `", error="` + code + `", error_description="` + desc + `"`}
}

func (s *Server) certs(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, s.jwks())
}

func (s *Server) discovery(w http.ResponseWriter, _ *http.Request, issuer string) {
	oidc := issuer + "/protocol/openid-connect"
	authMethods := []string{"private_key_jwt", "client_secret_basic", "client_secret_post", "tls_client_auth", "client_secret_jwt"}
	if s.ca != nil {
		authMethods = append(authMethods, "self_signed_tls_client_auth")
	}
	scopes := slices.Clone(builtinScopes)
	for _, sc := range s.defaultScope {
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	doc := map[string]any{
		"issuer":                                         issuer,
		"authorization_endpoint":                         oidc + "/auth",
		"token_endpoint":                                 oidc + "/token",
		"introspection_endpoint":                         oidc + "/token/introspect",
		"userinfo_endpoint":                              oidc + "/userinfo",
		"end_session_endpoint":                           oidc + "/logout",
		"jwks_uri":                                       issuer + s.jwksPath(),
		"revocation_endpoint":                            issuer + s.revocationPath(),
		"device_authorization_endpoint":                  oidc + "/auth/device",
		"grant_types_supported":                          []string{"authorization_code", "password", "refresh_token", "client_credentials", grantDeviceCode, grantTokenExchange},
		"code_challenge_methods_supported":               []string{"plain", "S256"},
		"authorization_response_iss_parameter_supported": true,
		"response_types_supported":                       []string{"code", "none", "id_token", "token", "id_token token", "code id_token", "code token", "code id_token token"},
		"subject_types_supported":                        []string{"public", "pairwise"},
		"id_token_signing_alg_values_supported":          []string{"RS256"},
		"token_endpoint_auth_methods_supported":          authMethods,
		"introspection_endpoint_auth_methods_supported":  authMethods,
		"revocation_endpoint_auth_methods_supported":     authMethods,
		"scopes_supported":                               scopes,
		"claims_supported": []string{"aud", "sub", "iss", "auth_time", "name", "given_name", "family_name",
			"preferred_username", "email", "email_verified", "acr", "azp", "sid"},
		"backchannel_logout_supported":                             true,
		"frontchannel_logout_supported":                            true,
		"pushed_authorization_request_endpoint":                    oidc + "/ext/par/request",
		"require_pushed_authorization_requests":                    false, // Keycloak says false even for clients that require it
		"dpop_signing_alg_values_supported":                        dpopAlgNames(),
		"token_endpoint_auth_signing_alg_values_supported":         []string{"PS384", "ES384", "RS384", "HS256", "HS512", "ES256", "RS256", "HS384", "ES512", "PS256", "PS512", "RS512", "EdDSA"},
		"tls_client_certificate_bound_access_tokens":               true,
		"introspection_endpoint_auth_signing_alg_values_supported": []string{"PS384", "ES384", "RS384", "HS256", "HS512", "ES256", "RS256", "HS384", "ES512", "PS256", "PS512", "RS512", "EdDSA"},
		"revocation_endpoint_auth_signing_alg_values_supported":    []string{"PS384", "ES384", "RS384", "HS256", "HS512", "ES256", "RS256", "HS384", "ES512", "PS256", "PS512", "RS512", "EdDSA"},
	}
	if s.mtlsURL != "" {
		mb := s.mtlsURL + "/auth/realms/" + s.realm
		mo := mb + "/protocol/openid-connect"
		doc["mtls_endpoint_aliases"] = map[string]string{
			"token_endpoint":                        mo + "/token",
			"revocation_endpoint":                   mb + s.revocationPath(),
			"introspection_endpoint":                mo + "/token/introspect",
			"device_authorization_endpoint":         mo + "/auth/device",
			"pushed_authorization_request_endpoint": mo + "/ext/par/request",
			"end_session_endpoint":                  mo + "/logout",
			"userinfo_endpoint":                     mo + "/userinfo",
		}
	}
	if s.opts.NoIntrospection {
		delete(doc, "introspection_endpoint")
		delete(doc, "introspection_endpoint_auth_methods_supported")
	}
	if s.opts.NoTokenExchange {
		doc["grant_types_supported"] = []string{"authorization_code", "password", "refresh_token", "client_credentials", grantDeviceCode}
	}
	if s.external != nil {
		doc["grant_types_supported"] = append(doc["grant_types_supported"].([]string), jwtBearerGrant)
	}
	if s.opts.NoLogout {
		delete(doc, "end_session_endpoint")
		delete(doc, "backchannel_logout_supported")
		delete(doc, "frontchannel_logout_supported")
	}
	writeJSON(w, http.StatusOK, doc)
}
