package tui

import (
	"context"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// Backend is the slice of *store.Store the TUI uses. Every call is made from
// a tea.Cmd, never from Update or View. Tests pass a fake.
type Backend interface {
	// EachKey calls fn for every key, by label (store.Store.EachKey: one
	// key at a time, fn keeps what it needs).
	EachKey(fn func(store.Key) error) error
	Resolve(label string) (store.Key, error)
	// Create, Login and Refresh return the key and the token set they hold.
	Create(ctx context.Context, nk store.NewKey) (store.Key, *auth.TokenSet, error)
	Login(ctx context.Context, label string, opts store.LoginOptions) (store.Key, *auth.TokenSet, error)
	Refresh(ctx context.Context, label string) (store.Key, *auth.TokenSet, error)
	Current(label string) (*auth.TokenSet, error)
	// Liveness asks the server whether it still accepts the key's access
	// token (a locally valid token may belong to a session that ended).
	Liveness(ctx context.Context, label string) (auth.Liveness, error)
	MarkUsed(label string) error
	Logout(ctx context.Context, label string) (auth.EndResult, error)
	Remove(ctx context.Context, label string) (auth.EndResult, error)
	Rename(label, newLabel string) error
	SetDefault(label string) error
	Connections() []auth.Connection
	Settings() store.Settings
	// Stamp identifies the store's content (a few stat calls): the app
	// compares it when the store's files change (or on its tick, for a
	// backend it cannot watch) and reloads only when it changed.
	Stamp() (store.Stamp, error)
	// ChangesSince tells which keys' state changed since a stamp, read
	// again, or that the key list must be read again (All): the app reads
	// one key used by another process, not all of them.
	ChangesSince(since store.Stamp) (store.Changes, error)
	// Requests is the Request screen's history and saved requests, kept
	// in the store's state directory without credentials.
	Requests() *store.RequestHistory
}

// Verifier checks a token's signature; *auth.Client is one.
type Verifier interface {
	Verify(ctx context.Context, conns []auth.Connection, token string) auth.Verification
}

// KeySetVerifier checks a token against a key set fetched from a JWKS URL
// (the inspector's w, as `inspect --verify --jwks URL`); *auth.Client is
// one. A Verifier that is not one cannot take a JWKS URL.
type KeySetVerifier interface {
	FetchKeySet(ctx context.Context, url string) (auth.KeySet, error)
	VerifyWithKeySet(token string, ks auth.KeySet) auth.Verification
}

var (
	_ Backend        = (*store.Store)(nil)
	_ Verifier       = (*auth.Client)(nil)
	_ KeySetVerifier = (*auth.Client)(nil)
)
