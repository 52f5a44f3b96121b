package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/auth/authtest"
	"github.com/shipkey/shipkey/internal/optest"
	"github.com/shipkey/shipkey/internal/scryptcost"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanUp{m}, map[string]func(){
		// The scripts' shipkey under go test -cover (else the built one,
		// see setupScript). It wraps new file-backend stores at a low
		// scrypt work factor (internal/scryptcost says why), as do the
		// binaries buildShipkey builds; this test process itself keeps the
		// default.
		"shipkey": func() { scryptcost.WorkFactor = testWorkFactor; os.Exit(run()) },
		// Commands for shipkey exec to run.
		"showenv":  childShowEnv,
		"exitwith": childExitWith,
		"killself": childKillSelf,
		"trapterm": childTrapTerm,
		"catstdin": func() { _, _ = io.Copy(os.Stdout, os.Stdin) },
		// A job that outlives its token, fed by exec --serve's socket.
		"sockettoken": childSocketToken,
		// A command that calls an API with $SHIPKEY_TOKEN.
		"envtokenapi": childEnvTokenAPI,
		// A program that asks exec --serve's socket for DPoP proofs.
		"socketproof": childSocketProof,
		// A client holding many idle connections to a token socket.
		"sockethog": childSocketHog,
		// A scripted $BROWSER for the device and browser grants.
		"browser": childBrowser,
		// The same for the real OpenID provider (opscripts_test.go).
		"opbrowser": childOPBrowser,
	})
}

// cleanUp stops the OpenID provider the scripts shared and removes the
// built binaries once the tests have run (testscript.Main exits the
// process itself).
type cleanUp struct{ m *testing.M }

func (r cleanUp) Run() int {
	code := r.m.Run()
	optest.Stop()
	removeBuilds()
	return code
}

// childShowEnv prints NAME=VALUE, or "NAME unset", for each argument; with
// -v first, only the values.
//
//	showenv [-v] NAME...
func childShowEnv() {
	args := os.Args[1:]
	valuesOnly := len(args) > 0 && args[0] == "-v"
	if valuesOnly {
		args = args[1:]
	}
	for _, name := range args {
		v, ok := os.LookupEnv(name)
		switch {
		case valuesOnly:
			fmt.Println(v)
		case ok:
			fmt.Printf("%s=%s\n", name, v)
		default:
			fmt.Printf("%s unset\n", name)
		}
	}
}

// childExitWith exits with the code given, after a line on stderr.
func childExitWith() {
	code, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(99)
	}
	fmt.Fprintf(os.Stderr, "exitwith: exiting %d\n", code)
	os.Exit(code)
}

// childKillSelf dies by the signal numbered in its argument.
func childKillSelf() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(99)
	}
	_ = signalPid(os.Getpid(), syscall.Signal(n))
	time.Sleep(10 * time.Second)
	os.Exit(98)
}

// childTrapTerm writes its parent's pid (shipkey's) to FILE, then waits at
// most patience(10 s) for SIGTERM: on it, it prints "got SIGTERM" and
// exits 0.
//
//	trapterm FILE
func childTrapTerm() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	if err := os.WriteFile(os.Args[1]+".tmp", []byte(strconv.Itoa(os.Getppid())), 0o600); err != nil {
		os.Exit(97)
	}
	if err := os.Rename(os.Args[1]+".tmp", os.Args[1]); err != nil {
		os.Exit(97)
	}
	select {
	case <-sigs:
		fmt.Println("got SIGTERM")
		os.Exit(0)
	case <-time.After(patience(10 * time.Second)):
		fmt.Println("no SIGTERM")
		os.Exit(1)
	}
}

var updateScripts = flag.Bool("update-scripts", false, "update testscript cmp files")

// TestScripts runs the CLI as a user types it: testdata/script/*.txtar, each
// against its own authtest realm and its own config and state directories.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Setup:               setupScript,
		RequireExplicitExec: true,
		UpdateScripts:       *updateScripts,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"authserver":    cmdAuthServer,
			"nosecrets":     cmdNoSecrets,
			"exits":         cmdExits,
			"waitport":      cmdWaitPort,
			"hostiletoken":  cmdHostileToken,
			"corruptconfig": cmdCorruptConfig,
			"writeenv":      cmdWriteEnv,
			"sleep":         cmdSleep,
			"tamper":        cmdTamper,
			"sigterm":       cmdSigterm,
			"headerserver":  cmdHeaderServer,
			"jsonfield":     cmdJSONField,
			"apiserver":     cmdAPIServer,
			"bigjson":       cmdBigJSON,
			"samebody":      cmdSameBody,
			"socketgone":    cmdSocketGone,
			"snapshot":      cmdSnapshot,
			"waitexpiry":    cmdWaitExpiry,
			"dpopsend":      cmdDPoPSend,
			"audited":       cmdAudited,
			"sockcall":      cmdSockCall,
		},
	})
}

// scriptKey is the Env.Values key of a script's *realm.
type scriptKey struct{}

// testClock is the realm's clock: real time plus an offset the script moves
// with `authserver advance`.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// realm is one script's authorization server and the secrets it knows.
type realm struct {
	mu           sync.Mutex
	srv          *authtest.Server
	clock        *testClock
	password     string
	clientSecret string
	passphrase   string
	hardened     hardenedRealm
	marks        map[string]int // authserver mark
}

const (
	scriptUser   = "alice"
	scriptClient = "shipping-api"
	// scriptPublicClient has no secret (browser and device grants);
	// scriptNoGrantsClient has the secret but may use no grant but the
	// password grant (Keycloak: service accounts, device grant and standard
	// flow off).
	scriptPublicClient   = "shipping-cli"
	scriptNoGrantsClient = "shipping-legacy"
	// scriptCISubject is the subject of the realm's external issuer's
	// tokens (authserver assertion): alice's link, shipping-ci's subject.
	scriptCISubject = "repo:acme/shipping:ref:refs/heads/main"
)

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// realmConfig is the script realm: the Shipping Service's lifetimes unless
// overridden.
func (r *realm) config(access, refresh time.Duration, rotate bool) authtest.Config {
	return authtest.Config{
		Users: []authtest.User{{
			Username: scriptUser, Password: r.password, Email: "alice@example.com",
			FirstName: "Alice", LastName: "Shipper",
			RealmRoles:  []string{"offline_access", "shipper"},
			ClientRoles: map[string][]string{scriptClient: {"write"}},
			// A CI job's identity at the realm's external issuer signs in
			// as alice (JWT bearer grant).
			ExternalSubject: scriptCISubject,
		}, {
			// Another person of the realm, for sign-ins by the wrong account.
			Username: "mallory", Password: r.password, Email: "mallory@example.com",
			RealmRoles: []string{"offline_access"},
		}},
		Clients: []authtest.Client{
			{ID: scriptClient, Secret: r.clientSecret, ServiceAccount: true, DeviceGrant: true},
			{ID: scriptPublicClient, DeviceGrant: true},
			{ID: scriptNoGrantsClient, Secret: r.clientSecret, NoStandardFlow: true},
			// The hardened clients: PKCE required on the device grant too.
			{ID: "shipping-signed", AuthMethod: authtest.AuthPrivateKeyJWT, JWKS: r.hardened.jwks, ServiceAccount: true, DeviceGrant: true, DevicePKCE: true},
			{ID: "shipping-hmac", AuthMethod: authtest.AuthClientSecretJWT, Secret: r.hardened.hmacSecret, ServiceAccount: true, DeviceGrant: true, DevicePKCE: true},
			{ID: "shipping-dpop", Secret: r.clientSecret, DPoP: true, ServiceAccount: true, DeviceGrant: true, DevicePKCE: true},
			{ID: "shipping-par", Secret: r.clientSecret, RequirePAR: true},
			{ID: "shipping-mtls", AuthMethod: authtest.AuthTLSClient, ServiceAccount: true, DeviceGrant: true, DevicePKCE: true},
			{ID: "shipping-selfsigned", AuthMethod: authtest.AuthSelfSignedTLS, JWKS: r.hardened.selfJWKS, ServiceAccount: true, DeviceGrant: true, DevicePKCE: true},
			// Key-less CI logins: the external issuer's token authenticates
			// the client (federated JWT) and is its JWT bearer grant.
			{ID: "shipping-ci", AuthMethod: authtest.AuthFederatedJWT, FederatedSubject: scriptCISubject, JWTBearerGrant: true},
		},
		ExternalIssuer:     true,
		MTLS:               true,
		DPoPNonces:         true,
		DeviceInterval:     time.Second,
		AccessTTL:          access,
		RefreshTTL:         refresh,
		RevokeRefreshToken: rotate,
		Now:                r.clock.Now,
	}
}

func setupScript(env *testscript.Env) error {
	r := &realm{
		clock:        &testClock{},
		password:     "pw-" + randomHex(10),
		clientSecret: "cs-" + randomHex(10),
		passphrase:   "pp-" + randomHex(10),
	}
	if err := r.hardened.make(); err != nil {
		return err
	}
	r.srv = authtest.NewServer(r.config(1314000*time.Second, 30*time.Minute, false))
	if err := r.hardened.files(env.WorkDir, env.Setenv, r.srv); err != nil {
		return err
	}
	env.Values[scriptKey{}] = r
	env.Values[apiKey{}] = &apiHolder{}
	env.Values[auditSeenKey{}] = map[string]bool{}
	env.Defer(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.srv.Close()
	})

	closed, err := closedURL()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// The scripts' shipkey is the built one (buildShipkey: low scrypt work
	// factor, shipkey-team beside it), as people run it and at about half
	// the start-up cost of this test binary, which the scripts ran some
	// 800 times; under go test -cover, this binary's in-process shipkey,
	// whose coverage counts.
	if testing.CoverMode() == "" {
		dir, err := lowCostBuild.install()
		if err != nil {
			return err
		}
		env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
	}
	work := env.WorkDir
	home := filepath.Join(work, "home")
	vars := map[string]string{
		"AUTH_URL":           r.srv.URL(),
		"REALM":              r.srv.Realm(),
		"ISSUER":             r.srv.Issuer(),
		"CLIENT_ID":          scriptClient,
		"PUBLIC_CLIENT_ID":   scriptPublicClient,
		"LEGACY_CLIENT_ID":   scriptNoGrantsClient,
		"USERNAME":           scriptUser,
		"PASSWORD":           r.password,
		"CLIENT_SECRET":      r.clientSecret,
		"CLOSED_URL":         closed,
		"FREE_PORT":          strconv.Itoa(port),
		"HOME":               home,
		"XDG_CONFIG_HOME":    filepath.Join(home, ".config"),
		"XDG_STATE_HOME":     filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME":      filepath.Join(home, ".local", "share"),
		"XDG_RUNTIME_DIR":    filepath.Join(home, "run"),
		"SHIPKEY_CONFIG_DIR": filepath.Join(work, "config"),
		"SHIPKEY_STATE_DIR":  filepath.Join(work, "state"),
		"SHIPKEY_SECRETS":    "file",
		"SHIPKEY_PASSPHRASE": r.passphrase,
		// The unlocked key: see unlockMech.
		"SHIPKEY_UNLOCK_MECH": unlockMech(),
		"NO_COLOR":            "1",
	}
	for k, v := range vars {
		env.Setenv(k, v)
	}
	env.Defer(func() { forgetIdentityCache(filepath.Join(vars["SHIPKEY_STATE_DIR"], "secrets.key.age")) })
	// After every script, whatever it did: no secret in any file shipkey wrote.
	env.Defer(func() {
		if err := findSecrets(r, []string{vars["SHIPKEY_CONFIG_DIR"], vars["SHIPKEY_STATE_DIR"], home}, nil); err != nil {
			env.T().Fatal(err)
		}
	})
	return nil
}

// unlockMech is where scripts keep the unlocked key: the kernel keyring
// where it answers, so that a script derives its passphrase once (scrypt,
// about a second, several under -race) rather than in every command, and
// forgets it when the script ends; else each process (none), slower but
// leaving nothing behind.
func unlockMech() string {
	if kernelKeyringWorks() {
		return "kernel"
	}
	return "none"
}

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func scriptRealm(ts *testscript.TestScript) *realm {
	return ts.Value(scriptKey{}).(*realm)
}

// cmdAuthServer controls the script's realm:
//
//	authserver start [-access D] [-refresh D] [-rotate] [-beside] [-noexchange]  replace it (new URL in $AUTH_URL)
//	authserver endsessions                               end every session
//	authserver advance D                                 move the realm's clock
//	authserver count NAME N                              assert a request count
//	authserver mark NAME                                 note the count, for:
//	authserver count NAME +N                             N requests since the mark
//	authserver fail ENDPOINT STATUS [hostile|drop]       next request answers STATUS (or none)
//	authserver stop                                      close it ($AUTH_URL unreachable)
//	authserver assertion FILE [-ttl D] [-aud A] [-sub S] [-untrusted]
//	                                                     write a token of the realm's external issuer (on its clock)
//	authserver assertionseen FILE                        the last assertion the realm received is FILE's
func cmdAuthServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! authserver")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: authserver start|endsessions|advance|count|mark|fail|stop ...")
	}
	r := scriptRealm(ts)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch args[0] {
	case "start":
		fs := flag.NewFlagSet("authserver start", flag.ContinueOnError)
		access := fs.Duration("access", 1314000*time.Second, "access token lifetime")
		refresh := fs.Duration("refresh", 30*time.Minute, "refresh token lifetime")
		rotate := fs.Bool("rotate", false, "refresh token rotation with reuse detection")
		beside := fs.Bool("beside", false, "discovery beside the token endpoint, keys at /jwks")
		noExchange := fs.Bool("noexchange", false, "no token exchange (a realm before Keycloak 26.2)")
		ts.Check(fs.Parse(args[1:]))
		r.srv.Close()
		cfg := r.config(*access, *refresh, *rotate)
		cfg.DiscoveryBesideToken = *beside
		cfg.NoTokenExchange = *noExchange
		if *beside {
			cfg.JWKSPath = "/jwks"
		}
		r.srv = authtest.NewServer(cfg)
		ts.Setenv("AUTH_URL", r.srv.URL())
		ts.Setenv("ISSUER", r.srv.Issuer())
		// Its mTLS listener has a CA of its own: new client certificates.
		ts.Check(r.hardened.files(ts.Getenv("WORK"), ts.Setenv, r.srv))
	case "endsessions":
		r.srv.EndSessions()
	case "advance":
		if len(args) != 2 {
			ts.Fatalf("usage: authserver advance DURATION")
		}
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		r.clock.offset.Add(int64(d))
	case "count":
		if len(args) != 3 {
			ts.Fatalf("usage: authserver count NAME N|+N")
		}
		want, err := strconv.Atoi(strings.TrimPrefix(args[2], "+"))
		ts.Check(err)
		got := r.srv.Count(args[1])
		if strings.HasPrefix(args[2], "+") {
			got -= r.marks[args[1]]
		}
		if got != want {
			ts.Fatalf("authserver count %s = %d, want %s", args[1], got, args[2])
		}
	case "mark":
		if len(args) != 2 {
			ts.Fatalf("usage: authserver mark NAME")
		}
		if r.marks == nil {
			r.marks = map[string]int{}
		}
		r.marks[args[1]] = r.srv.Count(args[1])
	case "fail":
		if len(args) < 3 {
			ts.Fatalf("usage: authserver fail ENDPOINT STATUS [hostile|drop]")
		}
		status, err := strconv.Atoi(args[2])
		ts.Check(err)
		body := `{"error":"temporarily_unavailable","error_description":"try later"}`
		f := authtest.Fault{Endpoint: args[1], Status: status, Body: body}
		if len(args) > 3 {
			switch args[3] {
			case "hostile":
				f.Body = `{"error":"invalid_grant\u001b[2J","error_description":"Invalid user credentials\u001b]52;c;ZXZpbA==\u0007\u009b31m\u202e"}`
			case "drop":
				f.Drop = true
			default:
				ts.Fatalf("authserver fail: unknown mode %q (hostile, drop)", args[3])
			}
		}
		r.srv.Inject(f)
	case "stop":
		r.srv.Close()
	case "assertion":
		fs := flag.NewFlagSet("authserver assertion", flag.ContinueOnError)
		ttl := fs.Duration("ttl", 5*time.Minute, "lifetime (negative: expired already)")
		aud := fs.String("aud", "", "audience (default the realm's issuer)")
		sub := fs.String("sub", scriptCISubject, "subject")
		untrusted := fs.Bool("untrusted", false, "from an issuer the realm does not trust")
		if len(args) < 2 {
			ts.Fatalf("usage: authserver assertion FILE [-ttl D] [-aud A] [-sub S] [-untrusted]")
		}
		ts.Check(fs.Parse(args[2:]))
		a := authtest.Assertion{TTL: *ttl, Subject: *sub}
		if *aud != "" {
			a.Audience = []string{*aud}
		}
		var tok string
		var err error
		if *untrusted {
			var x *authtest.ExternalIssuer
			x, err = authtest.NewExternalIssuer("https://ci.untrusted.example")
			ts.Check(err)
			a.Now = r.clock.Now()
			if a.Audience == nil {
				a.Audience = []string{r.srv.Issuer()}
			}
			tok, err = x.Mint(a)
		} else {
			tok, err = r.srv.MintAssertion(a)
		}
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(tok+"\n"), 0o600))
	case "assertionseen":
		if len(args) != 2 {
			ts.Fatalf("usage: authserver assertionseen FILE")
		}
		seen := r.srv.Assertions()
		if len(seen) == 0 || seen[len(seen)-1] != strings.TrimSpace(ts.ReadFile(args[1])) {
			ts.Fatalf("the realm's last assertion (of %d) is not %s's", len(seen), args[1])
		}
	default:
		ts.Fatalf("authserver: unknown subcommand %q", args[0])
	}
}

// cmdNoSecrets fails when any file under the config and state directories
// (and $HOME) holds the realm's password or client secret, the passphrase,
// anything shaped like a JWT, or the trimmed contents of the files named as
// arguments (tokens a script captured).
func cmdNoSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! nosecrets")
	}
	var extra []string
	for _, a := range args {
		if s := strings.TrimSpace(ts.ReadFile(a)); s != "" {
			extra = append(extra, s)
		}
	}
	dirs := []string{ts.Getenv("SHIPKEY_CONFIG_DIR"), ts.Getenv("SHIPKEY_STATE_DIR"), ts.Getenv("HOME")}
	ts.Check(findSecrets(scriptRealm(ts), dirs, extra))
}

func findSecrets(r *realm, dirs []string, extra []string) error {
	secrets := map[string]string{
		"password":      r.password,
		"client secret": r.clientSecret,
		"passphrase":    r.passphrase,
	}
	for i, s := range extra {
		secrets[fmt.Sprintf("captured secret #%d", i+1)] = s
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for what, s := range secrets {
				if s != "" && bytes.Contains(data, []byte(s)) {
					return fmt.Errorf("%s holds the %s in plaintext", path, what)
				}
			}
			if loc := jwtPattern().FindIndex(data); loc != nil {
				return fmt.Errorf("%s holds a JWT in plaintext at byte %d", path, loc[0])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// cmdExits runs a program like exec and asserts its exit code; for a
// non-zero code it also asserts that the last line on stderr is the one
// "shipkey: <message>" line, free of control characters. With -quiet it
// asserts instead that nothing at all was printed; with -child the code is a
// command's that shipkey exec ran, and stderr is that command's.
//
//	exits [-quiet|-child] N program [args...]
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	mode := ""
	if len(args) > 0 && (args[0] == "-quiet" || args[0] == "-child") {
		mode, args = args[0], args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits [-quiet|-child] CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("running %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
	switch mode {
	case "-quiet":
		if out, errOut := ts.ReadFile("stdout"), ts.ReadFile("stderr"); out != "" || errOut != "" {
			ts.Fatalf("printed something: stdout %q, stderr %q", out, errOut)
		}
		return
	case "-child":
		return
	}
	if want == 0 {
		return
	}
	stderr := strings.TrimRight(ts.ReadFile("stderr"), "\n")
	last := stderr[strings.LastIndex(stderr, "\n")+1:]
	if !strings.HasPrefix(last, "shipkey: ") {
		ts.Fatalf("last stderr line %q does not start with \"shipkey: \"", last)
	}
	for _, c := range last {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			ts.Fatalf("error line holds control character %U: %q", c, last)
		}
	}
}

// cmdWaitPort waits (at most 10 s) until something listens on 127.0.0.1:PORT.
func cmdWaitPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitport PORT")
	}
	addr := net.JoinHostPort("127.0.0.1", args[0])
	deadline := time.Now().Add(patience(10 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdHostileToken writes to FILE an unsigned JWT whose claim names and values
// carry terminal control sequences.
func cmdHostileToken(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: hostiletoken FILE")
	}
	enc := base64.RawURLEncoding
	header := `{"alg":"RS256","typ":"JWT","kid":"k\u001b[2J"}`
	payload := `{"iss":"https://evil.example/\u001b]52;c;ZXZpbA==\u0007","sub":"x","exp":4102444800,` +
		`"preferred_username":"mallory\u001b[2J\u009b31m\u202e","evil\u001b[1mclaim":"v",` +
		`"realm_access":{"roles":["admin\u001b]0;pwned\u0007"]}}`
	tok := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString([]byte("sig"))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(tok+"\n"), 0o600))
}

// cmdCorruptConfig appends a line that is not TOML to config.toml.
func cmdCorruptConfig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: corruptconfig")
	}
	path := filepath.Join(ts.Getenv("SHIPKEY_CONFIG_DIR"), "config.toml")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.WriteString("this is = = not toml [[\n")
	ts.Check(err)
	ts.Check(f.Close())
}

// cmdWriteEnv writes the values of environment variables to FILE, one a
// line: secrets for stdin or a terminal without putting them in the script.
//
//	writeenv FILE VAR...
func cmdWriteEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: writeenv FILE VAR...")
	}
	var b strings.Builder
	for _, v := range args[1:] {
		b.WriteString(ts.Getenv(v) + "\n")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o600))
}

// cmdSleep waits: "sleep DURATION", for a short token to expire on
// shipkey's own clock (the realm's clock moves with authserver advance).
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d > 10*time.Second {
		ts.Fatalf("sleep: bad duration %q (at most 10s)", args[0])
	}
	time.Sleep(d)
}

// cmdTamper copies a JWT from SRC to DST with one character of its signature
// changed.
//
//	tamper SRC DST
func cmdTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tamper SRC DST")
	}
	tok := []byte(strings.TrimSpace(ts.ReadFile(args[0])))
	dot := bytes.LastIndexByte(tok, '.')
	if dot < 0 || dot+5 >= len(tok) {
		ts.Fatalf("tamper: %s holds no JWT", args[0])
	}
	i := dot + 5 // inside the signature, away from the last character's padding bits
	if tok[i] == 'A' {
		tok[i] = 'B'
	} else {
		tok[i] = 'A'
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), append(tok, '\n'), 0o600))
}

// cmdSigterm waits (at most 10 s) for FILE to hold a pid, written by the
// trapterm child of shipkey exec, and sends SIGTERM to that pid (shipkey).
//
//	sigterm FILE
func cmdSigterm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sigterm FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(patience(10 * time.Second))
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			ts.Check(err)
			ts.Check(signalPid(pid, syscall.SIGTERM))
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("sigterm: %s not written in 10s", args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
