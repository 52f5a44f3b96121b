package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/spf13/cobra"
)

// serveOptions hands out tokens over a unix socket.
type serveOptions struct {
	IO      *iostreams
	Store   func() (*store.Store, error)
	Secrets *secretSet

	Socket string   // --socket: the unix socket's path
	Keys   []string // --key: the labels served (all when empty)
	Sinks  []string // --sink PATH:KEY: token files kept fresh

	// IdleTimeout closes a connection idle between requests (0: 30 s).
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose answer is not taken within it
	// (0: 3 min, room for a renewal).
	WriteTimeout time.Duration
	// ConnState, when set, is told each connection's changes of state
	// (http.Server.ConnState).
	ConnState func(net.Conn, http.ConnState)
}

func newCmdServe(f *factory, runF func(context.Context, *serveOptions) error) *cobra.Command {
	opts := &serveOptions{IO: f.IO, Store: f.Store, Secrets: f.Secrets}
	cmd := &cobra.Command{
		Use:   "serve [--socket PATH [--key LABEL]...] [--sink PATH:KEY]...",
		Short: "Hand out tokens over a unix socket to local services and containers",
		Long: `Serve the keys' access tokens over HTTP on a unix socket, for services and
containers that should hold neither the client secret nor shipkey's store:

  GET /v1/token/LABEL?min_valid=60   the "shipkey token --json" body
  GET /v1/token/LABEL?audience=AUD   a token for another service, by token
                                     exchange (also resource, scope and
                                     requested_token_type), cached as for
                                     shipkey token --audience
  POST /v1/proof/LABEL               for a DPoP-bound key: the same body with
    {"method":"GET","url":"https://…"}   "dpop_proof", a proof signed for that
    (and "nonce" when the API asked)     request (one request only; a path
                                          goes under the key's api_url)

  curl --unix-socket PATH http://shipkey/v1/token/LABEL

min_valid is in seconds (or a duration such as 5m): the token is renewed first
when it would expire sooner. Tokens come from the store's one lifecycle: many
clients asking at once after expiry cause one refresh.

The socket is created mode 0600 in a directory only you can open (made 0700
when missing; one open to others is refused). Connections from another user
are refused (SO_PEERCRED), whatever the file modes. It never listens on TCP.
Only the keys named with --key are served (all keys when none is named).
SIGINT or SIGTERM stops it and removes the socket.

--sink PATH:KEY (repeatable, with or without --socket) keeps KEY's access
token in the file PATH, for programs that read a bearer token from a file:
mode 0600, replaced whole (a temporary file renamed over it: a reader never
sees part of a token, a symbolic link at PATH is replaced, not followed),
renewed when a quarter of the token's life is left (at most 5 minutes
ahead) and written again when another process renews the key. It is removed
when the key is logged out or removed (by any process), when its token
expired and could not be renewed (a failed renewal keeps the token on file
while it is valid, tried again; stderr says so), and when serve stops.
PATH's directory must exist, be writable and writable by no other user.

With the encrypted file backend, serve's unlock ends with the session's
(see shipkey unlock): after SHIPKEY_UNLOCK_TIMEOUT (default 10m) without
use by any shipkey process (serve's own reads of the secrets count), 2h
after the unlock, or at shipkey lock. Then a token it already handed out
is still served while it is valid for the min_valid asked; what needs the
secrets (a renewal, a key or audience not handed out yet, a DPoP proof) is
answered 503 store_locked, and one line on stderr says so for each lock.
After shipkey unlock it renews again, without a restart; the passphrase it
may have started with is never used again. SHIPKEY_UNLOCK_TIMEOUT=0 keeps
the unlock in serve's memory until it stops.

Answers: 200 with the token; 400 bad min_valid (or proof request, or a key
without a DPoP key: "not_dpop"); 401 the key needs a login
(shipkey login); 403 a key not served; 404 no such key; 502 the server
refused or could not be reached; 503 the store is locked (shipkey unlock).`,
		Example: `  shipkey serve --socket "$XDG_RUNTIME_DIR/shipkey/token.sock" --key prod
  curl -s --unix-socket "$XDG_RUNTIME_DIR/shipkey/token.sock" http://shipkey/v1/token/prod
  shipkey serve --sink /run/prometheus/shipping.token:prod   # bearer_token_file`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Socket == "" && len(opts.Sinks) == 0 {
				return usageErrorf("name the socket: --socket PATH, or a token file: --sink PATH:KEY (see: %s --help)", cmd.CommandPath())
			}
			if opts.Socket == "" && len(opts.Keys) > 0 {
				return usageErrorf("--key names the keys served on the socket; name it: --socket PATH (see: %s --help)", cmd.CommandPath())
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Socket, "socket", "", "path of the unix socket to create")
	cmd.Flags().StringArrayVar(&opts.Keys, "key", nil, "serve this key (repeat for more; all keys when none)")
	cmd.Flags().StringArrayVar(&opts.Sinks, "sink", nil, "keep KEY's access token in the file PATH (PATH:KEY, repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("key", completeLabelFlag(f))
	return cmd
}

func serveRun(ctx context.Context, opts *serveOptions) error {
	noCoreDump() // it holds every served key's tokens for hours
	st, err := opts.Store()
	if err != nil {
		return err
	}
	// The named keys must exist now, and the backend be unlocked before the
	// first client waits on a prompt nobody sees.
	svc := newKeys(st, nil, opts.IO, opts.Secrets, nil, nil)
	for _, l := range opts.Keys {
		if _, err := svc.LocalKey(l); err != nil {
			return err
		}
	}
	specs, err := checkSinks(opts.Sinks, svc)
	if err != nil {
		return err
	}
	if err := sinkNotSocket(specs, opts.Socket); err != nil {
		return err
	}
	if opts.Socket != "" {
		if err := refuseAgentDir(opts.Socket, st.AgentSocket()); err != nil {
			return err
		}
	}
	if err := st.Unlock(); err != nil {
		return err
	}
	followUnlock(st, opts.IO.ErrText())
	// What killed commands left behind is swept here, off the path of
	// `shipkey token` (whose cost must not grow with the number of keys).
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	defer stopSweeping()
	go sweepEvery(sweepCtx, st, store.SweepEvery)
	sinkCtx, stopSinks := context.WithCancel(context.WithoutCancel(ctx))
	sinksDone := make(chan struct{})
	go func() {
		defer close(sinksDone)
		runSinks(sinkCtx, svc, newSinks(st, svc, specs, func(format string, args ...any) {
			opts.IO.ErrText().Linef("shipkey: serve: "+format, args...)
		}))
	}()
	defer func() { stopSinks(); <-sinksDone }()
	for _, s := range specs {
		opts.IO.ErrText().Linef("Keeping key %s's token in %s", s.Label, s.Path)
	}
	if opts.Socket == "" {
		opts.IO.ErrText().Line(text.Trusted("Stop with ctrl+c or SIGTERM (the token files are removed)"))
		<-ctx.Done()
		stopSinks()
		<-sinksDone
		opts.IO.ErrText().Linef("Stopped keeping token files (%s); removed them", stopCause(ctx))
		return nil
	}
	ln, err := listenSocket(opts.Socket)
	if err != nil {
		return err
	}
	srv, fair := newSocketServer(newTokenHandler(st, opts.Keys, opts.Secrets, "serve"), ln, socketServerOptions{
		IdleTimeout: opts.IdleTimeout, WriteTimeout: opts.WriteTimeout, ConnState: opts.ConnState,
		Refused: func(uid int) {
			opts.IO.ErrText().Linef("shipkey: serve: refused a connection from uid %d (only uid %d is served)", uid, ln.uid)
		},
	})
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(fair)
	}()
	what := "all keys"
	if len(opts.Keys) > 0 {
		what = "keys " + strings.Join(opts.Keys, ", ")
	}
	opts.IO.ErrText().Linef("Serving tokens of %s on %s (stop with ctrl+c or SIGTERM)", what, opts.Socket)

	select {
	case err := <-served:
		ln.remove()
		return text.Errorf("serving on %s: %w", opts.Socket, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	ln.remove()
	stopSinks()
	<-sinksDone
	opts.IO.ErrText().Linef("Stopped serving tokens (%s); removed %s", stopCause(ctx), opts.Socket)
	return nil
}

// stopCause is what ended ctx, for the last line: the signal, else
// "stopped".
func stopCause(ctx context.Context) string {
	if sig, ok := stoppedBy(ctx); ok {
		return sig.String()
	}
	return "stopped"
}

// checkSinks reads the --sink values and checks each file's place and key
// (checkSinkPath): one line for the first that will not do.
func checkSinks(values []string, svc *keys.Service) ([]sinkSpec, error) {
	specs, err := parseSinks(values, svc)
	if err != nil {
		return nil, err
	}
	configDir, stateDir := svc.Store().Paths()
	for _, s := range specs {
		for _, d := range []string{configDir, stateDir} {
			if pathWithin(s.Path, d) {
				return nil, usageErrorf("--sink %s: that is in shipkey's own directory %s, whose files a token file would replace; name a file elsewhere", s.Path, d)
			}
		}
		key, err := svc.LocalKey(s.Label)
		if err != nil {
			return nil, err
		}
		if key.Connection.DPoP {
			return nil, usageErrorf("--sink %s: key %s's tokens are DPoP-bound, useless without a proof per request; programs get both from the token socket (POST /v1/proof)", s.Path, s.Label)
		}
		if err := checkSinkPath(s.Path); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

// sinkNotSocket refuses a token file at the socket's path: the token would
// replace the socket, which nothing could reach then.
func sinkNotSocket(specs []sinkSpec, socket string) error {
	if socket == "" {
		return nil
	}
	abs, err := filepath.Abs(socket)
	if err != nil {
		return nil // the socket's own checks say it
	}
	for _, s := range specs {
		if s.Path == abs {
			return usageErrorf("--sink %s: that is the socket's path (--socket); name another file", s.Path)
		}
	}
	return nil
}

// followUnlock has serve's unlock of the file backend end with the
// session's (store.FollowSession) and says each change in one line: a lock
// once, when a use finds it, and the unlock again.
func followUnlock(st *store.Store, errOut text.Writer) {
	following, why := st.FollowSession(func(locked bool) {
		if locked {
			errOut.Line(text.Trusted("shipkey: serve: the store is locked (its unlock ended: idle timeout, 2 h maximum or shipkey lock); tokens already handed out are served while valid, renewals answer 503 until you run `shipkey unlock`"))
		} else {
			errOut.Line(text.Trusted("shipkey: serve: the store is unlocked again; renewals resume"))
		}
	})
	if !following && why != "" {
		errOut.Linef("shipkey: serve: the secrets file stays unlocked in this process until serve stops (%s)", why)
	}
}

// sweepEvery calls st.Sweep at start and every period until ctx ends.
func sweepEvery(ctx context.Context, st *store.Store, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		st.Sweep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refuseAgentDir refuses a token socket in the unlock agent's directory or
// in one above it: that directory is meant to be shared (mounted into a
// container), and whoever can write there could replace the agent and
// capture the store's unlocked key.
func refuseAgentDir(socket, agentSocket string) error {
	abs, err := filepath.Abs(socket)
	if err != nil {
		return err
	}
	dir, agentDir := filepath.Dir(abs), filepath.Dir(agentSocket)
	if dir == agentDir || strings.HasPrefix(agentDir, dir+string(filepath.Separator)) {
		return text.Errorf("--socket %s: the unlock agent's directory %s is there; a directory shared with a container must not hold it: use one of its own, such as $XDG_RUNTIME_DIR/shipkey/token.sock", socket, agentDir)
	}
	return nil
}

// tokenSocket is a private token socket for one command's lifetime (exec
// --serve): in a fresh 0700 directory, serving one key.
type tokenSocket struct {
	Path string
	ln   *socketListener
	srv  *http.Server
	dir  string
}

// startTokenSocket serves label's tokens on a socket in a new private
// directory until Stop.
func startTokenSocket(st *store.Store, label string, x auth.Exchange, secrets *secretSet, refused func(uid, owner int)) (*tokenSocket, error) {
	dir, err := os.MkdirTemp("", "shipkey-exec-")
	if err != nil {
		return nil, fmt.Errorf("the token socket's directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := listenSocket(filepath.Join(dir, "token.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ts := &tokenSocket{Path: ln.path, ln: ln, dir: dir}
	srv, fair := newSocketServer(withExchange(newTokenHandler(st, []string{label}, secrets, "exec --serve"), x), ln, socketServerOptions{
		Refused: func(uid int) { refused(uid, ln.uid) },
	})
	ts.srv = srv
	go func() { _ = srv.Serve(fair) }()
	return ts, nil
}

// Stop closes the socket and removes it with its directory.
func (ts *tokenSocket) Stop() {
	_ = ts.srv.Close()
	ts.ln.remove()
	_ = os.RemoveAll(ts.dir)
}

// tokenHandler answers GET /v1/token/{label}.
type tokenHandler struct {
	st      *store.Store
	svc     *keys.Service // hands out the tokens and DPoP keys
	keys    []string      // served labels; all when empty
	secrets *secretSet
	via     string // the audit trail's way: serve or exec --serve

	mu       sync.Mutex
	lifetime map[string]time.Duration // each key's last access token's life, as issued
}

func newTokenHandler(st *store.Store, keys []string, secrets *secretSet, via string) http.Handler {
	h := &tokenHandler{st: st, svc: newKeys(st, nil, nil, secrets, nil, nil), keys: keys, secrets: secrets, via: via, lifetime: map[string]time.Duration{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/token/{label}", h.token)
	mux.HandleFunc("POST /v1/proof/{label}", h.proof)
	if len(keys) == 1 {
		// One key served (exec --serve): its token needs no label.
		mux.HandleFunc("GET /v1/token", func(w http.ResponseWriter, r *http.Request) {
			r.SetPathValue("label", keys[0])
			h.token(w, r)
		})
		mux.HandleFunc("POST /v1/proof", func(w http.ResponseWriter, r *http.Request) {
			r.SetPathValue("label", keys[0])
			h.proof(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeServeError(w, http.StatusNotFound, "not_found", "the paths are GET /v1/token/LABEL?min_valid=SECONDS and POST /v1/proof/LABEL")
	})
	return mux
}

func (h *tokenHandler) token(w http.ResponseWriter, r *http.Request) {
	label := r.PathValue("label")
	if len(h.keys) > 0 && !slices.Contains(h.keys, label) {
		writeServeError(w, http.StatusForbidden, "not_served", "key "+label+" is not served here (serve --key)") // cleaned there, label and all
		return
	}
	minValid, err := parseMinValid(r.URL.Query().Get("min_valid"))
	if err != nil {
		writeServeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if x := exchangeFromQuery(r.URL.Query()); !x.IsZero() {
		h.exchanged(w, r, label, x, minValid)
		return
	}
	asked := minValid
	if !h.knowsLife(label) && minValid > 0 {
		// Learn the life of this key's tokens from the one on hand (renewed
		// only if due anyway) before asking for a min_valid.
		if ts, err := h.st.Token(r.Context(), label, store.TokenOptions{}); err == nil {
			h.learn(label, ts)
		}
	}
	minValid, beyond := h.reachable(label, minValid)
	ts, err := h.svc.KeyToken(r.Context(), store.Key{Label: label}, keys.TokenOptions{MinValid: minValid, Quiet: true, HandOut: h.handOut(r)})
	if err != nil {
		status, code := serveErrorStatus(err)
		writeServeError(w, status, code, err.Error())
		return
	}
	life := h.learn(label, ts)
	if !beyond && life > 0 && asked >= life {
		beyond = true // learnt on this request
	}
	doc := struct {
		tokenDoc
		Warning string `json:"warning,omitempty"`
	}{tokenDoc: newTokenDoc(label, ts)}
	if beyond {
		doc.Warning = fmt.Sprintf("min_valid=%s is beyond this key's token life (%s): answered with a fresh token instead of renewing on every request; ask for less than %s", text.Span(asked), text.Span(life), text.Span(life))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = writeJSON(w, doc)
}

// handOut is the hand-out of a token to the request's peer; nil for the
// proof endpoint's token, which records the proof itself once signed.
func (h *tokenHandler) handOut(r *http.Request) *keys.HandOut {
	if r.Context().Value(proofKey{}) != nil {
		return nil
	}
	return peerOf(r.Context(), audit.Token, h.via)
}

// reachable caps minValid for label below the life of the key's tokens as
// the server issues them: a min_valid no token can meet would renew on
// every request (50 clients, 50 renewals). The capped value renews once
// three quarters of a token's life is spent. beyond reports a cap.
func (h *tokenHandler) reachable(label string, minValid time.Duration) (time.Duration, bool) {
	h.mu.Lock()
	life := h.lifetime[label]
	h.mu.Unlock()
	if life <= 0 || minValid < life {
		return minValid, false
	}
	return life / 4, true
}

func (h *tokenHandler) knowsLife(label string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lifetime[label] > 0
}

// learn records the life of ts as issued (expires_in, else its expiry less
// when it arrived) and returns it (0 when unknown).
func (h *tokenHandler) learn(label string, ts *auth.TokenSet) time.Duration {
	life := time.Duration(ts.ExpiresIn) * time.Second
	if life <= 0 && !ts.ObtainedAt.IsZero() && !ts.AccessExpiry().IsZero() {
		life = ts.AccessExpiry().Sub(ts.ObtainedAt)
	}
	if life <= 0 {
		return 0
	}
	h.mu.Lock()
	h.lifetime[label] = life
	h.mu.Unlock()
	return life
}

// parseMinValid reads min_valid: whole seconds, or a duration (5m); empty
// is zero.
func parseMinValid(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d < 0 {
		return 0, text.Errorf("min_valid=%s is not a number of seconds (or a duration such as 5m)", s)
	}
	return d, nil
}

// serveErrorStatus maps a token failure to an HTTP status and error code.
func serveErrorStatus(err error) (int, string) {
	switch {
	case errors.Is(err, store.ErrSessionLocked):
		return http.StatusServiceUnavailable, "store_locked"
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "no_such_key"
	case errors.Is(err, store.ErrLoginNeeded) || auth.IsLoginRequired(err):
		return http.StatusUnauthorized, "login_needed"
	case auth.KindOf(err) != auth.KindUnknown:
		return http.StatusBadGateway, "server_error"
	default:
		return http.StatusInternalServerError, "internal_error"
	}
}

// writeServeError writes {"error","error_description"}; the description is
// sanitized (it may quote a server's words).
func writeServeError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = writeJSON(w, map[string]string{"error": code, "error_description": text.Safe(desc)})
}
