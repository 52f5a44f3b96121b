package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// startLink is a one-time loopback URL (http://127.0.0.1:PORT/start/RANDOM)
// that redirects to target, the URL a browser must open to sign in. It is
// what a browser program gets on its command line, which every local user
// can read (/proc/PID/cmdline): they learn neither state, PKCE challenge,
// nonce nor user code, and should one of them fetch it first, the person's
// own fetch is the second and aborts the sign-in instead of completing
// theirs (login CSRF).
type startLink struct {
	path, target string
	err          error // said when fetched twice
	fetches      atomic.Int32
	aborted      chan error
}

func newStartLink(op, target string) *startLink {
	return &startLink{
		path: "/start/" + randomString(), target: target, aborted: make(chan error, 1),
		err: &Error{Kind: KindAccessDenied, Op: op,
			Msg:  "the sign-in link was opened twice (another program may have read it), so this sign-in is aborted",
			Hint: "nothing was stored; run the command again and open the link once, in your own browser"},
	}
}

// url is the link on port.
func (l *startLink) url(port int) string { return fmt.Sprintf("http://127.0.0.1:%d%s", port, l.path) }

// serve answers req when it is for the link and reports whether it was:
// the first GET is redirected to the target, any later one aborts.
func (l *startLink) serve(w http.ResponseWriter, req *http.Request) bool {
	if req.URL.Path != l.path {
		return false
	}
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return true
	}
	if l.fetches.Add(1) == 1 {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, req, l.target, http.StatusFound)
		return true
	}
	closePage(w, l.err)
	select {
	case l.aborted <- l.err:
	default:
	}
	return true
}

// listenStartLink serves l alone on a loopback port until the returned stop
// is called; "" when no port could be had (the browser then gets no link).
func listenStartLink(l *startLink) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", func() {}
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !l.serve(w, req) {
			http.NotFound(w, req)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	return l.url(ln.Addr().(*net.TCPAddr).Port), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}

// is reports whether err is the link's abort.
func (l *startLink) is(err error) bool { return errors.Is(err, l.err) }

// abortable is ctx, also ended (its cause the link's abort) when the link is
// opened twice; stop ends the watch.
func (l *startLink) abortable(ctx context.Context) (_ context.Context, stop func()) {
	abortCtx, abort := context.WithCancelCause(ctx)
	go func() {
		select {
		case err := <-l.aborted:
			abort(err)
		case <-abortCtx.Done():
		}
	}()
	return abortCtx, func() { abort(nil) }
}
