package cli

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// factory builds, in one place and only on demand, what commands need: the
// streams, the environment, the clock, the auth client and the store.
// Nothing is opened until a command asks for it, so `shipkey version` and
// `shipkey completion` never touch the disk or the keyring.
type factory struct {
	IO     *iostreams
	Getenv func(string) string
	Now    func() time.Time
	// Args is the command line as given (without the program name).
	Args []string

	// Diag is where the store's warnings and the debug log go: stderr, or
	// the interactive app's status line while it owns the terminal.
	Diag *switchWriter
	// Debug turns on the redacting debug log (set by --debug).
	Debug bool
	// Timeout bounds each request to the server (set by --timeout; else
	// SHIPKEY_TIMEOUT, else timeout in config.toml, else auth's default).
	Timeout time.Duration
	// CAFile names a PEM bundle of extra roots for a private CA (set by
	// --ca-file; else SHIPKEY_CA_FILE).
	CAFile string
	// wait says on stderr that a request is taking long.
	wait *waitNotice
	// Secrets are the secrets this process has handled; the debug log hides
	// them.
	Secrets *secretSet

	// openStore is store.Open, replaceable in tests.
	openStore func(store.Options) (*store.Store, error)

	authOnce sync.Once
	auth     *auth.Client
	authErr  error

	engOnce sync.Once
	eng     team.Engine
	engErr  error

	storeOnce sync.Once
	store     *store.Store
	storeErr  error
	readOnce  bool // the store is opened with ReadOnce (readingStore)
}

// readingStore is Store for a command that reads a key or two and exits
// (token, header, status): config.toml and state.db are read once
// (store.Options.ReadOnce).
func (f *factory) readingStore() (*store.Store, error) {
	f.readOnce = true
	return f.Store()
}

func newFactory(ios *iostreams, getenv func(string) string) *factory {
	return &factory{
		IO:        ios,
		Getenv:    withTakenEnv(getenv),
		Now:       time.Now,
		Secrets:   &secretSet{},
		openStore: store.Open,
		Diag:      &switchWriter{w: ios.ErrOut},
	}
}

// EnvTimeout bounds each request to the server, as --timeout does.
const EnvTimeout = "SHIPKEY_TIMEOUT"

// requestTimeout is the timeout the command line or the environment set
// (0: neither; config.toml's timeout or auth's default then applies).
func (f *factory) requestTimeout() (time.Duration, error) {
	if f.Timeout != 0 {
		if f.Timeout < 0 {
			return 0, &usageError{fmt.Errorf("--timeout %s is not a positive duration such as 45s or 2m", f.Timeout)}
		}
		return f.Timeout, nil
	}
	if v := f.Getenv(EnvTimeout); v != "" {
		return store.ParseTimeout(EnvTimeout, v)
	}
	return 0, nil
}

// switchWriter writes to one writer at a time; Set swaps it.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// current is the destination now.
func (s *switchWriter) current() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w
}

// Set makes w the destination and returns a function that puts the previous
// one back.
func (s *switchWriter) Set(w io.Writer) (restore func()) {
	s.mu.Lock()
	prev := s.w
	s.w = w
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.w = prev
		s.mu.Unlock()
	}
}

// Logger is the debug logger: a redacting text handler on stderr with --debug,
// nil (discard) otherwise.
func (f *factory) Logger() *slog.Logger {
	if !f.Debug {
		return nil
	}
	h := slog.NewTextHandler(f.Diag, &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(newRedactingHandler(h, f.Secrets))
}

// caFile is --ca-file, else SHIPKEY_CA_FILE: a PEM bundle of extra roots.
func (f *factory) caFile() string { return cmp.Or(f.CAFile, f.Getenv("SHIPKEY_CA_FILE")) }

// Auth returns the auth client, built once. SHIPKEY_CA_FILE names a PEM
// bundle of extra roots for a private CA.
func (f *factory) Auth() (*auth.Client, error) {
	f.authOnce.Do(func() {
		timeout, err := f.requestTimeout()
		if err != nil {
			f.authErr = err
			return
		}
		if f.wait == nil {
			f.wait = newWaitNotice(f.IO.ErrOut, f.Diag, f.IO.StderrTTY)
		}
		f.auth, f.authErr = auth.NewClient(auth.Options{
			CAFile:  f.caFile(),
			Now:     f.Now,
			Logger:  f.Logger(),
			Timeout: timeout,
			Waiting: f.wait.begin,
		})
	})
	return f.auth, f.authErr
}

// Store opens the user's store once. Directories and backend come from the
// environment (SHIPKEY_CONFIG_DIR, SHIPKEY_STATE_DIR, SHIPKEY_SECRETS); the
// file backend's passphrase comes from SHIPKEY_PASSPHRASE or, on a terminal,
// a hidden prompt.
func (f *factory) Store() (*store.Store, error) {
	f.storeOnce.Do(func() {
		client, err := f.Auth()
		if err != nil {
			f.storeErr = err
			return
		}
		opts := store.Options{
			Auth:   client,
			Now:    f.Now,
			Warn:   f.Diag,
			Logger: f.Logger(),

			ReadOnce: f.readOnce,
		}
		if f.IO.ReadSecret != nil {
			opts.Passphrase = func(prompt string) (string, error) {
				p, err := f.IO.ReadSecret(text.Sanitize(prompt))
				f.Secrets.Add(p)
				return p, err
			}
		}
		opts.Unlock = f.unlockOptions()
		f.store, f.storeErr = f.openStore(opts)
		// config.toml's timeout, unless --timeout or SHIPKEY_TIMEOUT said
		// otherwise; the client is not shared yet.
		if t, _ := f.requestTimeout(); t == 0 && f.storeErr == nil {
			client.SetTimeout(f.store.Settings().Timeout)
		}
	})
	return f.store, f.storeErr
}

// Close releases the store if one was opened.
func (f *factory) Close() error {
	if f.store != nil {
		return f.store.Close()
	}
	return nil
}
