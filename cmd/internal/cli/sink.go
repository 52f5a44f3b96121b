package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
	"github.com/shipkey/shipkey/store/keys"
)

// A token file (serve --sink PATH:KEY, exec --token-file) holds a key's
// current access token, for programs that read a bearer token from a file
// (Prometheus bearer_token_file, a Kubernetes tokenFile), as Vault Agent's
// file sink does. The file is mode 0600 and only ever replaced whole: the
// token is written to a temporary file in the same directory, synced, and
// renamed over PATH (a symbolic link at PATH is replaced, never followed),
// so a reader sees the old token or the new one, never a part. It is
// renewed when a quarter of the token's life is left (at most 5 minutes
// ahead), written again when another process renewed the key or another
// program removed or replaced the file (at once where its directory can be
// watched), and removed when the key is logged out or removed (another process's logout
// is seen through the store's files, as the app sees it), when the process
// that keeps it stops, and when its token expired without a renewal (a
// failed renewal keeps the last token while it is valid, and is tried
// again).

// envTokenFile names exec --token-file's file in the command's environment.
const envTokenFile = "SHIPKEY_TOKEN_FILE"

const (
	// maxSinkAhead bounds how long before its expiry a token file is
	// renewed: a quarter of the token's life, at most this.
	maxSinkAhead = 5 * time.Minute
	// maxSinkRetry bounds the wait between tries after a failed renewal.
	maxSinkRetry = 30 * time.Second
	// sinkPoll is how often the store's stamp is read when its files
	// cannot be watched.
	sinkPoll = 2 * time.Second
)

// sinkSpec is one token file: the key label's token at Path.
type sinkSpec struct{ Path, Label string }

// parseSinks reads --sink PATH:KEY values. A path or a label may hold a
// colon: of the splits at each colon, from the last, the first whose label
// names a key of this machine is taken.
func parseSinks(values []string, svc *keys.Service) ([]sinkSpec, error) {
	var out []sinkSpec
	for _, v := range values {
		var spec sinkSpec
		var firstErr error
		for i := strings.LastIndexByte(v, ':'); i >= 0; i = strings.LastIndexByte(v[:i], ':') {
			path, label := v[:i], v[i+1:]
			if path == "" || label == "" {
				continue
			}
			_, err := svc.LocalKey(label)
			if err == nil {
				spec = sinkSpec{Path: path, Label: label}
				break
			}
			if firstErr == nil {
				firstErr = text.Errorf("--sink %s: %w", v, err)
			}
		}
		switch {
		case spec.Path != "":
		case firstErr != nil:
			return nil, firstErr
		default:
			return nil, usageErrorf("--sink %s: give PATH:KEY, such as --sink /run/app/token:prod", text.ShellQuote(v))
		}
		abs, err := filepath.Abs(spec.Path)
		if err != nil {
			return nil, err
		}
		spec.Path = abs
		if slices.ContainsFunc(out, func(s sinkSpec) bool { return s.Path == abs }) {
			return nil, usageErrorf("--sink %s: that file is named twice; one key a file", abs)
		}
		out = append(out, spec)
	}
	return out, nil
}

// checkSinkPath refuses, in one line, a token file that cannot be written
// or that another user could replace or read: a directory that does not
// exist, is not writable, or that another user can write (or one above it,
// unless sticky and root's), and a path that names a directory or a
// special file.
func checkSinkPath(path string) error {
	dir := filepath.Dir(path)
	show := text.Sanitize(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return text.Errorf("token file %s: the directory %s does not exist; create it (mkdir -m 700 %s) or name another", show, dir, text.ShellQuote(dir))
	case err != nil:
		return text.Errorf("token file %s: %v", show, unwrapExecError(err))
	case !fi.IsDir():
		return text.Errorf("token file %s: %s is not a directory", show, dir)
	}
	if err := checkDirOwner(dir, os.Getuid(), "token file "+show.String()+" is in"); err != nil {
		return err
	}
	if err := checkParents(dir, os.Getuid(), "token file "+show.String()); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return text.Errorf("token file %s exists and is not a file; remove it or name another", show)
	}
	// Can a file be made there at all? (A read-only directory, another
	// user's, a read-only file system: said now, not at the first token.)
	probe, err := os.CreateTemp(dir, sinkTempPattern(path))
	if err != nil {
		return text.Errorf("token file %s: cannot write in %s (%v)", show, dir, unwrapExecError(err))
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return err
	}
	removeStaleSinkTemps(path, time.Now().Add(-staleSinkTemp))
	return nil
}

// staleSinkTemp is the age past which a token file's temporary file is
// one a killed process left (a live one is renamed within moments).
const staleSinkTemp = time.Minute

// removeStaleSinkTemps removes the temporary files of path's token file
// last written before cutoff: a kill -9 between the write and the rename
// leaves one, holding a token, that nothing else removes.
func removeStaleSinkTemps(path string, cutoff time.Time) {
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), sinkTempPattern(path)))
	for _, p := range names {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			_ = os.Remove(p)
		}
	}
}

// pathWithin reports whether path is dir or in it, symbolic links of
// either resolved as far as they exist.
func pathWithin(path, dir string) bool {
	if dir == "" {
		return false
	}
	resolve := func(p string) string {
		p, _ = filepath.Abs(p)
		for tail := ""; ; {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Join(r, tail)
			}
			parent := filepath.Dir(p)
			if parent == p {
				return filepath.Join(p, tail)
			}
			tail = filepath.Join(filepath.Base(p), tail)
			p = parent
		}
	}
	rel, err := filepath.Rel(resolve(dir), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// sinkTempPattern names a token file's temporary files: hidden, beside it.
func sinkTempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// writeTokenFile replaces path with token, whole (see above), and returns
// the file as written.
func writeTokenFile(path, token string) (fi os.FileInfo, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), sinkTempPattern(path)) // mode 0600
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return nil, err
	}
	if _, err = io.WriteString(tmp, token); err != nil {
		return nil, err
	}
	if err = tmp.Sync(); err != nil {
		return nil, err
	}
	if fi, err = tmp.Stat(); err != nil {
		return nil, err
	}
	if err = tmp.Close(); err != nil {
		return nil, err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return fi, nil
}

// tokenSink keeps one token file.
type tokenSink struct {
	sinkSpec
	st  *store.Store
	svc *keys.Service
	now func() time.Time
	say func(format string, args ...any) // one line on stderr
	// shownPath and shownLabel are Path and Label as the lines say them,
	// cleaned when the sink is made.
	shownPath, shownLabel text.Clean

	written *auth.TokenSet // the token in the file; nil: no file
	// recorded is the token last recorded in the audit trail as handed out
	// to the file.
	recorded string
	file     os.FileInfo // the file as written: removed only while it is that file
	failed   text.Clean  // the failure said last (empty after a success)
	// failedLogin: that failure was a login needed (not said again in other
	// words while it lasts).
	failedLogin bool
	gone        text.Clean // why the file is gone, as said last
}

// sinkAhead is how long before its expiry a token of life is renewed.
func sinkAhead(life time.Duration) time.Duration {
	if life <= 0 {
		return 0
	}
	return min(life/4, maxSinkAhead)
}

// tokenLife is the life of ts as issued: expires_in, else its expiry less
// when it arrived (0 when unknown).
func tokenLife(ts *auth.TokenSet) time.Duration {
	if life := time.Duration(ts.ExpiresIn) * time.Second; life > 0 {
		return life
	}
	return ts.Access().Lifetime()
}

// loggedOut reports whether key was logged out (its tokens dropped, or its
// session's end pending), as opposed to marked logged out because its
// refresh token is known dead (its access token is then kept until it
// expires).
func loggedOut(key store.Key) bool {
	return key.LoggedOut && (key.Token.ObtainedAt.IsZero() || !key.EndPending.IsZero())
}

// step brings the file up to date and returns when to look again (0: at the
// next change of the store).
func (s *tokenSink) step(ctx context.Context) time.Duration {
	key, err := s.st.Key(s.Label)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.drop(text.Cleanf("key %s is gone (removed or renamed)", s.shownLabel))
		return 0
	case err != nil:
		return s.fail(err)
	case loggedOut(key):
		s.drop(text.Cleanf("key %s was logged out; written again after shipkey login %s", s.shownLabel, text.ShellQuote(s.Label)))
		return 0
	case key.LoggedOut:
		// Its refresh token is dead: only a login helps; the token in the
		// file stays while it is valid.
		return s.fail(&store.LoginNeededError{Label: key.Label, Why: "its session ended"})
	}
	now := s.now()
	ahead := sinkAhead(tokenLife(&key.Token))
	if s.written != nil && !s.onDisk() && s.gone.IsEmpty() {
		s.gone = text.Trusted("removed or replaced by another program")
		s.say("token file %s: %s", s.shownPath, s.gone)
	}
	if s.written == nil || !s.onDisk() || !s.written.Access().ValidFor(now, ahead) || !sameToken(&key.Token, s.written) {
		var err error
		if ahead, err = s.renew(ctx, key, ahead); err != nil {
			return s.fail(err)
		}
	}
	exp := s.written.Access()
	if !exp.Stated() {
		return 0
	}
	return max(exp.At.Add(-ahead).Sub(now), time.Second/10)
}

// renew gets key's token valid for ahead and writes it when it is a new
// one; it returns how far ahead of the new token's expiry to renew.
func (s *tokenSink) renew(ctx context.Context, key store.Key, ahead time.Duration) (time.Duration, error) {
	ts, err := s.svc.KeyToken(ctx, key, keys.TokenOptions{MinValid: ahead, Quiet: true})
	if err != nil {
		return 0, err
	}
	if s.written == nil || ts.AccessToken != s.written.AccessToken || !s.onDisk() {
		// Each new token the file takes is one hand-out, recorded
		// before it is written (every hand-out has an entry). Its
		// receiver is this process, which keeps the file: who reads
		// the file is not known (not the process that started serve).
		// A write that failed is tried again with the same token:
		// recorded once, not at every try.
		if s.recorded != ts.AccessToken {
			if err := s.svc.Record(key.Label, auth.Exchange{}, keys.HandOut{What: audit.Token, Via: "token file " + s.Path, To: audit.Self}, ts.AccessToken); err != nil {
				return 0, err
			}
			s.recorded = ts.AccessToken
		}
		fi, err := writeTokenFile(s.Path, ts.AccessToken)
		if err != nil {
			return 0, sinkWriteError{unwrapExecError(err)}
		}
		s.written, s.file = ts, fi
	}
	if !s.failed.IsEmpty() || !s.gone.IsEmpty() {
		s.say("token file %s: written again (key %s's token, valid until %s)", s.shownPath, s.shownLabel, text.Stamp(ts.AccessExpiry()))
	}
	s.failed, s.failedLogin, s.gone = text.Clean{}, false, text.Clean{}
	return sinkAhead(tokenLife(ts)), nil
}

// onDisk reports whether the file at Path is the one this sink wrote last
// (not removed, or replaced, by another program since).
func (s *tokenSink) onDisk() bool {
	fi, err := os.Lstat(s.Path)
	return err == nil && s.file != nil && os.SameFile(fi, s.file)
}

// sameToken reports whether the key's stored token (metadata) is the one
// written: another process may have renewed it since.
func sameToken(stored, written *auth.TokenSet) bool {
	return stored.ObtainedAt.Unix() == written.ObtainedAt.Unix() && stored.AccessExpiry().Unix() == written.AccessExpiry().Unix()
}

// fail says a failed renewal (once until a success), keeps the token on
// file while it is valid, removes it once it expired, and returns when to
// try again.
func (s *tokenSink) fail(err error) time.Duration {
	now := s.now()
	line := text.Sanitize(oneLine(err)) // the error's words, from anywhere
	login := errors.Is(err, store.ErrLoginNeeded) || auth.IsLoginRequired(err)
	if login && s.failedLogin {
		line = s.failed // said already, in the words of the renewal that found it
	}
	var exp auth.Expiry
	if s.written != nil {
		exp = s.written.Access()
		if exp.Stated() && !now.Before(exp.At) {
			s.drop(text.Cleanf("key %s's token expired and could not be renewed (%s)", s.shownLabel, line))
			s.failed = line
		}
	}
	if line != s.failed {
		s.failed, s.failedLogin = line, login
		s.sayFailed(err, line, exp)
	}
	var left time.Duration
	if s.written != nil && exp.Stated() {
		left = exp.Remaining(now)
	}
	return sinkRetry(login, left)
}

// sayFailed says the failure line (err's, renewing or writing), and
// whether the token on file (its expiry exp) stays until it expires or is
// gone.
func (s *tokenSink) sayFailed(err error, line text.Clean, exp auth.Expiry) {
	if s.written == nil {
		s.say("token file %s: no token for key %s: %s", s.shownPath, s.shownLabel, line)
		return
	}
	what, kept := "renewing", ""
	if errors.As(err, new(sinkWriteError)) {
		what = "writing"
	}
	if !s.onDisk() {
		kept = "; the file is gone, written again when it can be" // its directory went
	} else if exp.Stated() {
		kept = "; the token on file stays until it expires at " + text.Stamp(exp.At)
	}
	s.say("token file %s: %s key %s's token failed: %s%s", s.shownPath, what, s.shownLabel, line, kept)
}

// sinkRetry is when to try again after a failure, login when only a login
// helps, left the time the token on file has.
func sinkRetry(login bool, left time.Duration) time.Duration {
	switch {
	case login && left > 0:
		return left // only a login helps: remove the file at its expiry
	case login:
		return 0 // the next change of the store (a login)
	case left > 0:
		return max(min(left/4, maxSinkRetry, left), 10*time.Millisecond)
	default:
		return maxSinkRetry
	}
}

// sinkWriteError is a failure to write the token file (not to renew).
type sinkWriteError struct{ err error }

func (e sinkWriteError) Error() string { return e.err.Error() }

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// drop removes the file, when it is still the one written (or, before the
// first write, a file left by an earlier run), and says why once.
func (s *tokenSink) drop(why text.Clean) {
	fi, err := os.Lstat(s.Path)
	removed := false
	if err == nil && fi.Mode().IsRegular() && (s.file == nil || os.SameFile(fi, s.file)) {
		removed = os.Remove(s.Path) == nil
	}
	if (removed || s.written != nil) && why != s.gone {
		s.say("token file %s: removed: %s", s.shownPath, why)
	}
	s.written, s.file, s.gone = nil, nil, why
}

// newSinks makes the keepers of the token files specs name; say prints
// their lines.
func newSinks(st *store.Store, svc *keys.Service, specs []sinkSpec, say func(string, ...any)) []*tokenSink {
	sinks := make([]*tokenSink, len(specs))
	for i, spec := range specs {
		sinks[i] = &tokenSink{sinkSpec: spec, st: st, svc: svc, now: time.Now, say: say,
			shownPath: text.Sanitize(spec.Path), shownLabel: text.Sanitize(spec.Label)}
	}
	return sinks
}

// runSinks keeps the token files until ctx ends, then removes them.
func runSinks(ctx context.Context, svc *keys.Service, sinks []*tokenSink) {
	if len(sinks) == 0 {
		return
	}
	var wg sync.WaitGroup
	changed := watchStoreFiles(ctx, svc, len(sinks))
	touched := watchSinkFiles(ctx, sinks)
	for i, s := range sinks {
		wg.Go(func() { s.run(ctx, changed[i], touched[i]) })
	}
	wg.Wait()
}

// watchSinkFiles tells each sink when its file changes on disk (another
// program removed or replaced it: it is written again at once, not at the
// next renewal). Where the directories cannot be watched, the channels
// are nil: the file is written again at the next step.
func watchSinkFiles(ctx context.Context, sinks []*tokenSink) []chan struct{} {
	out := make([]chan struct{}, len(sinks))
	paths := make([]string, len(sinks))
	for i, s := range sinks {
		paths[i] = s.Path
	}
	w, err := watchDirs(paths)
	if err != nil {
		return out
	}
	for i := range out {
		out[i] = make(chan struct{}, 1)
	}
	go relayChanges(ctx, w, paths, func(i int) {
		if i >= 0 {
			notify(out[i])
			return
		}
		for _, c := range out {
			notify(c)
		}
	})
	return out
}

// notify leaves a signal pending on c unless one is.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run is one sink's loop: a step when it is due, the store changed or its
// file changed on disk.
func (s *tokenSink) run(ctx context.Context, changed, touched <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := s.step(ctx)
		var due <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case <-ctx.Done():
			s.removeAtStop()
			return
		case <-changed:
		case <-touched:
		case <-due:
		}
	}
}

// removeAtStop removes the file as the keeping process stops: no token is
// left behind on disk.
func (s *tokenSink) removeAtStop() {
	if s.onDisk() {
		_ = os.Remove(s.Path)
	}
	s.written, s.file = nil, nil
}

// watchStoreFiles tells each of n receivers when the store's files change
// (another process's logout, renewal or login), through an inotify watch of
// their directories, else by reading the store's stamp every sinkPoll. A
// change pending is not told twice.
func watchStoreFiles(ctx context.Context, svc *keys.Service, n int) []chan struct{} {
	out, tell := fanOut(n)
	files := svc.StampFiles()
	w, err := watchDirs(files)
	if err != nil {
		go pollStamp(ctx, svc, tell)
		return out
	}
	go relayChanges(ctx, w, files, func(int) { tell() })
	return out
}

// fanOut makes n channels of one pending signal each, and tell, which
// signals each one unless a signal is pending.
func fanOut(n int) ([]chan struct{}, func()) {
	out := make([]chan struct{}, n)
	for i := range out {
		out[i] = make(chan struct{}, 1)
	}
	return out, func() {
		for _, c := range out {
			notify(c)
		}
	}
}

// errNoStampFiles is watchDirs's answer when the store names no files.
var errNoStampFiles = errors.New("no stamp files")

// watchDirs is an inotify watch of the directories of files.
func watchDirs(files []string) (*fsnotify.Watcher, error) {
	if len(files) == 0 {
		return nil, errNoStampFiles
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, d := range uniqueDirs(files) {
		if err := w.Add(d); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	return w, nil
}

// relayChanges calls tell with the index in files of each change of one
// that w sees, and with -1 at each of w's errors (an overflow may hide a
// change of any), until ctx ends; it closes w.
func relayChanges(ctx context.Context, w *fsnotify.Watcher, files []string, tell func(i int)) {
	defer w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if i := slices.Index(files, filepath.Clean(ev.Name)); i >= 0 && ev.Op != fsnotify.Chmod {
				tell(i)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			tell(-1) // an overflow: something may have changed
		}
	}
}

// uniqueDirs is the directories of files, each once.
func uniqueDirs(files []string) []string {
	var dirs []string
	for _, f := range files {
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// pollStamp calls tell whenever the store's stamp changed, read every
// sinkPoll, until ctx ends.
func pollStamp(ctx context.Context, svc *keys.Service, tell func()) {
	t := time.NewTicker(sinkPoll)
	defer t.Stop()
	last, _ := svc.Stamp()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now, err := svc.Stamp(); err == nil && now != last {
			last = now
			tell()
		}
	}
}

// tokenFile is exec --token-file's file: a token file in a new private
// directory, kept for the command's lifetime.
type tokenFile struct {
	Path string
	dir  string
	stop context.CancelFunc
	done chan struct{}
}

// startTokenFile writes key's token to a file in a new 0700 directory and
// keeps it fresh until Stop; an error when no token could be written.
func startTokenFile(st *store.Store, svc *keys.Service, label string, say func(string, ...any)) (*tokenFile, error) {
	dir, err := os.MkdirTemp("", "shipkey-exec-")
	if err != nil {
		return nil, fmt.Errorf("the token file's directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var first error // what the first step said: its failure
	started := false
	s := newSinks(st, svc, []sinkSpec{{Path: filepath.Join(dir, "token"), Label: label}}, func(format string, args ...any) {
		if !started {
			first = fmt.Errorf(format, args...)
			return
		}
		say(format, args...)
	})[0]
	s.step(context.Background())
	if s.written == nil {
		os.RemoveAll(dir)
		if first == nil {
			first = errors.New("no token was written")
		}
		return nil, first
	}
	started = true
	ctx, stop := context.WithCancel(context.Background())
	tf := &tokenFile{Path: s.Path, dir: dir, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(tf.done)
		runSinks(ctx, svc, []*tokenSink{s})
	}()
	return tf, nil
}

// Stop ends the renewals and removes the file with its directory.
func (tf *tokenFile) Stop() {
	tf.stop()
	<-tf.done
	_ = os.RemoveAll(tf.dir)
}
