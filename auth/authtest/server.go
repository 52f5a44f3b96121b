package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running Keycloak-compatible realm on loopback. All its methods
// are safe for concurrent use.
type Server struct {
	realm        string
	accessSecs   int64 // access token lifetime, whole seconds (>= 1)
	refreshSecs  int64 // refresh token lifetime and session idle timeout; <= 0: none
	rotate       bool
	defaultScope []string
	now          func() time.Time
	hmacKey      []byte
	hmacKid      string
	mux          *http.ServeMux
	opts         Config // the profile options (ErrorBodies and after)

	ln   net.Listener
	srv  *http.Server
	url  string
	once sync.Once

	mu       sync.Mutex
	users    map[string]*userRecord // by lower-cased username
	clients  map[string]Client
	sessions map[string]*session     // by sid
	revoked  map[string]bool         // jti of revoked access tokens
	keys     []*signingKey           // keys[0] signs; all are published
	opaque   map[string]*parsedToken // opaque refresh tokens (OpaqueRefreshTokens)
	lastRT   string                  // the last refresh token issued
	faults   map[string][]Fault
	counts   map[string]int
	devices  map[string]*deviceAuth // by device code
	codes    map[string]*authCode   // authorization codes not yet redeemed
	pars     map[string]*parRequest // pushed authorization requests by request_uri

	dpopNonce     string      // the nonce DPoP proofs must carry (Config.DPoPNonces)
	dpopJTIs      ReplayCache // DPoP proofs seen
	assertionJTIs ReplayCache // client assertions seen
	ca            *CA         // the mTLS listener's CA (Config.MTLS)
	mtlsURL       string      // the mTLS listener's base URL
	mtlsSrv       *http.Server
	external      *ExternalIssuer // Config.ExternalIssuer
	assertions    []string        // external assertions received
}

type userRecord struct {
	User
	id string // stable UUID derived from the username
}

// session is a Keycloak user session bound to the client that created it.
type session struct {
	id, username, clientID string
	scope                  string
	nonce                  string // the authorization request's, for ID tokens
	offline                bool
	started, lastRefresh   int64           // unix seconds
	redeemed               map[string]bool // refresh token jtis already used (rotation)
	bind                   binding         // what the session's tokens are bound to (DPoP key, certificate)
	audience               string          // set on a copy: the aud of a token exchanged for another audience
}

// DemoConfig is the realm `shipkey demo` serves and tests use as a default:
// realm master, user demo/demo-password (Dana Demo, demo@example.com) with
// realm roles offline_access, uma_authorization, shipper and client roles
// shipping-api: write, read; client shipping-api/demo-client-secret; 15-day
// access tokens and 30-minute refresh tokens like the Shipping Service; no
// refresh token rotation. The client also has a service account (client
// credentials) and the device grant; the public client shipping-cli (no
// secret) signs in through the browser or a device code. shipping-dpop
// (the same secret) requires DPoP-bound tokens, shipping-jwt authenticates
// with client_secret_jwt (DemoJWTSecret); the PAR endpoint is served.
func DemoConfig() Config {
	return Config{
		Realm: DemoRealm,
		Users: []User{{
			Username:      DemoUsername,
			Password:      DemoPassword,
			Email:         "demo@example.com",
			EmailVerified: true,
			FirstName:     "Dana",
			LastName:      "Demo",
			RealmRoles:    []string{"offline_access", "uma_authorization", "shipper"},
			ClientRoles:   map[string][]string{DemoClientID: {"write", "read"}},
			// The demo CI job's identity signs in as demo (JWT bearer grant).
			ExternalSubject: DemoCISubject,
		}},
		Clients: []Client{
			{ID: DemoClientID, Secret: DemoClientSecret, ServiceAccount: true, DeviceGrant: true},
			{ID: DemoPublicClientID, DeviceGrant: true},
			// A hardened realm's clients: DPoP-bound tokens required, and
			// client_secret_jwt. PAR and DPoP are open to every client.
			{ID: DemoDPoPClientID, Secret: DemoClientSecret, DPoP: true, ServiceAccount: true, DeviceGrant: true},
			{ID: DemoJWTClientID, Secret: DemoJWTSecret, AuthMethod: AuthClientSecretJWT, ServiceAccount: true, DeviceGrant: true},
			// Key-less CI logins: an assertion of the realm's external
			// issuer authenticates the client and is its JWT bearer grant.
			{ID: DemoCIClientID, AuthMethod: AuthFederatedJWT, FederatedSubject: DemoCISubject, JWTBearerGrant: true, ServiceAccount: true},
		},
		ExternalIssuer:     true,
		AccessTTL:          1314000 * time.Second,
		RefreshTTL:         30 * time.Minute,
		RevokeRefreshToken: false,
		Scope:              "email profile write", // the Shipping Service documents scope write
	}
}

// NewServer starts a server for cfg on 127.0.0.1 with a random port. It
// panics if it cannot listen, like httptest.NewServer. Close it when done.
func NewServer(cfg Config) *Server {
	s, err := Start("127.0.0.1:0", cfg)
	if err != nil {
		panic("authtest: " + err.Error())
	}
	return s
}

// Start starts a server for cfg on addr, which must be a loopback address:
// "127.0.0.1:0", "[::1]:8080", "localhost:8080", or a bare port ("8080" or
// ":8080") meaning 127.0.0.1. It never listens on other interfaces.
func Start(addr string, cfg Config) (*Server, error) {
	hostport, err := loopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", hostport, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	if s.external != nil {
		s.external.URL = s.url + "/ci"
	}
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	go func() { _ = s.srv.Serve(ln) }()
	if cfg.MTLS {
		if err := s.startMTLS(ln.Addr().(*net.TCPAddr).IP); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// startMTLS serves the realm again over TLS on the same loopback address
// with a port of its own, asking every client for a certificate.
func (s *Server) startMTLS(ip net.IP) error {
	ca, err := NewCA("authtest realm " + s.realm)
	if err != nil {
		return err
	}
	cert, err := ca.serverCert()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return err
	}
	s.ca = ca
	s.mtlsURL = "https://" + ln.Addr().String()
	s.mtlsSrv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12},
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = s.mtlsSrv.ServeTLS(ln, "", "") }()
	return nil
}

// CA is the certificate authority of the mTLS listener (Config.MTLS): its
// certificate is what clients trust, and IssueClient makes certificates
// tls_client_auth accepts. Nil without MTLS.
func (s *Server) CA() *CA { return s.ca }

// MTLSURL is the base URL of the mTLS listener ("" without MTLS): the realm
// is at MTLSURL()+"/auth/realms/"+Realm(), with the same issuer as URL().
func (s *Server) MTLSURL() string { return s.mtlsURL }

func loopbackAddr(addr string) (string, error) {
	if _, err := strconv.Atoi(addr); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	switch {
	case host == "":
		host = "127.0.0.1"
	case strings.EqualFold(host, "localhost"):
		host = "127.0.0.1"
	default:
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("address %q is not a loopback address: the test server only listens on 127.0.0.1 or ::1", addr)
		}
	}
	return net.JoinHostPort(host, port), nil
}

func newServer(cfg Config) (*Server, error) {
	s := &Server{
		realm:    cfg.Realm,
		rotate:   cfg.RevokeRefreshToken,
		now:      cfg.Now,
		users:    map[string]*userRecord{},
		clients:  map[string]Client{},
		sessions: map[string]*session{},
		revoked:  map[string]bool{},
		opaque:   map[string]*parsedToken{},
		opts:     cfg,
		faults:   map[string][]Fault{},
		counts:   map[string]int{},
		devices:  map[string]*deviceAuth{},
		codes:    map[string]*authCode{},
		pars:     map[string]*parRequest{},
	}
	if s.realm == "" {
		s.realm = DemoRealm
	}
	if s.now == nil {
		s.now = time.Now
	}
	access := cfg.AccessTTL
	if access <= 0 {
		access = 5 * time.Minute
	}
	s.accessSecs = wholeSeconds(access)
	switch {
	case cfg.RefreshTTL < 0:
		s.refreshSecs = 0
	case cfg.RefreshTTL == 0:
		s.refreshSecs = 30 * 60
	default:
		s.refreshSecs = wholeSeconds(cfg.RefreshTTL)
	}
	scope := cfg.Scope
	if strings.TrimSpace(scope) == "" {
		scope = "email profile"
	}
	s.defaultScope = strings.Fields(scope)
	for _, u := range cfg.Users {
		s.setUser(u)
	}
	for _, c := range cfg.Clients {
		s.clients[c.ID] = c
		if c.ServiceAccount {
			// Keycloak's service account user: no password logs it in.
			s.setUser(User{Username: serviceAccountPrefix + c.ID, Password: randomToken(32), RealmRoles: []string{"default-roles-" + s.realm}})
		}
	}
	var key *signingKey
	var err error
	if cfg.SigningKey != nil {
		key, err = newSigningKey(cfg.SigningKey)
	} else {
		key, err = sharedSigningKey()
	}
	if err != nil {
		return nil, err
	}
	s.keys = []*signingKey{key}
	s.hmacKey = make([]byte, 64)
	if _, err := rand.Read(s.hmacKey); err != nil {
		return nil, err
	}
	s.hmacKid = newUUID()
	s.dpopNonce = randomToken(16)
	if cfg.ExternalIssuer {
		if s.external, err = NewExternalIssuer(""); err != nil {
			return nil, err
		}
	}
	s.mux = s.routes()
	return s, nil
}

func wholeSeconds(d time.Duration) int64 {
	if n := int64(d / time.Second); n > 0 {
		return n
	}
	return 1
}

// URL is the auth_url of the server, e.g. "http://127.0.0.1:41234". The realm
// lives at URL()+"/auth/realms/"+Realm().
func (s *Server) URL() string { return s.url }

// Realm is the name of the served realm.
func (s *Server) Realm() string { return s.realm }

// Issuer is the "iss" of tokens obtained through URL():
// URL()+"/auth/realms/"+Realm(). Like Keycloak, the server derives the issuer
// from the Host a request was sent to, so a client that calls it as
// "localhost" sees a different issuer.
func (s *Server) Issuer() string { return s.url + "/auth/realms/" + s.realm }

// Close stops the server and closes every connection. Safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		if s.srv != nil {
			_ = s.srv.Close()
		}
		if s.mtlsSrv != nil {
			_ = s.mtlsSrv.Close()
		}
	})
}

// Handler is the server's whole mux, for embedding in another http.Server.
func (s *Server) Handler() http.Handler { return s.mux }

// Count is the number of requests seen so far, by endpoint ("token", "logout",
// "userinfo", "introspect", "revoke", "certs", "discovery") or by grant type
// of token requests ("password", "refresh_token"). Requests answered by an
// injected fault are counted too.
func (s *Server) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name]
}

// Inject queues f for its endpoint: the next f.Times requests to it (1 when
// Times is 0) misbehave as f says. Faults for one endpoint apply in the order
// they were injected. It panics on an Endpoint name the server does not
// serve, so that a typo cannot make a fault test pass silently.
func (s *Server) Inject(f Fault) {
	switch f.Endpoint {
	case "token", "certs", "logout", "userinfo", "introspect", "revoke", "discovery", "device", "par":
	default:
		panic(fmt.Sprintf("authtest: Inject: unknown endpoint %q", f.Endpoint))
	}
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[f.Endpoint] = append(s.faults[f.Endpoint], f)
}

// EndSessions ends every session, as an admin logout or an idle timeout
// would: refresh then fails with "Session not active", introspection answers
// {"active": false} and userinfo 401, even for access tokens whose exp is far
// away.
func (s *Server) EndSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

// Sessions is the number of sessions the server holds alive now: what a
// logout or a revocation of the refresh token ends.
func (s *Server) Sessions() int {
	now := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if s.aliveLocked(ss, now) {
			n++
		}
	}
	return n
}

// LastRefreshToken is the refresh token the server issued last ("" before
// any), so that a test can later ask whether the server still accepts it.
func (s *Server) LastRefreshToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastRT
}

// RefreshAccepted is the server's view of refreshToken, without redeeming it:
// whether a refresh grant with it (by its own client) would succeed now.
func (s *Server) RefreshAccepted(refreshToken string) bool {
	p, err := s.parseRefresh(refreshToken)
	if err != nil {
		return false
	}
	now := s.now().Unix()
	if p.expiredAt(now) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[p.Sid]
	if !s.aliveLocked(ss, now) || (s.rotate && ss.redeemed[p.Jti]) {
		return false
	}
	rec := s.users[ss.username]
	return rec != nil && !rec.Disabled
}

// SetUser adds u or replaces the user of the same username (case-insensitive),
// e.g. to disable an account mid-test. Existing sessions stay, but refresh,
// introspection and userinfo refuse a disabled user's tokens.
func (s *Server) SetUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setUser(u)
}

// SetClient adds c or replaces the client of the same ID, e.g. to rotate
// its secret or turn a grant off mid-test.
func (s *Server) SetClient(c Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = c
}

func (s *Server) setUser(u User) {
	name := strings.ToLower(u.Username)
	u.Username = name
	sum := sha256.Sum256([]byte("authtest-user:" + name))
	s.users[name] = &userRecord{User: u, id: uuidFrom(sum[:16])}
}

// RotateKey generates a new RSA signing key, as a Keycloak admin rotating the
// realm keys: new tokens carry its kid; the JWKS publishes the new key first
// and keeps the old ones, so earlier tokens still verify. Generating a key
// takes a moment (RSA 2048).
func (s *Server) RotateKey() error {
	k, err := generateSigningKey()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append([]*signingKey{k}, s.keys...)
	return nil
}

// nextFault takes one use of the first queued fault for endpoint.
func (s *Server) nextFault(endpoint string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[endpoint]
	if len(q) == 0 {
		return Fault{}, false
	}
	f := q[0]
	q[0].Times--
	if q[0].Times <= 0 {
		s.faults[endpoint] = q[1:]
	}
	return f, true
}

func (s *Server) count(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if n != "" {
			s.counts[n]++
		}
	}
}

// hugeSize is the size of a Huge fault's body: over 2 MiB.
const hugeSize = 2<<20 + 4096

// applyFault answers the request as f says. It reports whether the request
// is done (false: a pure Delay, the normal handler answers next).
func applyFault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return true
		}
	}
	switch {
	case f.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return true
			}
		}
		panic(http.ErrAbortHandler) // aborts the response without an answer
	case f.Malformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{not json`))
		return true
	case f.Huge:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"access_token":"`))
		chunk := []byte(strings.Repeat("A", 64<<10))
		for n := 0; n < hugeSize; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return true
			}
		}
		_, _ = w.Write([]byte(`","token_type":"Bearer"}`))
		return true
	case f.Status != 0:
		ct := "text/html;charset=utf-8"
		if b := strings.TrimSpace(f.Body); strings.HasPrefix(b, "{") || strings.HasPrefix(b, "[") {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
		return true
	}
	return false
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(errors.New("authtest: no randomness"))
	}
	return uuidFrom(b[:])
}

// uuidFrom formats 16 bytes as a version-4-shaped UUID.
func uuidFrom(b []byte) string {
	var u [16]byte
	copy(u[:], b)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
