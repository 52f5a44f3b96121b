package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store/team"
)

func (h *handle) key(e *cacheEntry, removed bool) Key {
	k := Key{Team: h.name(), Removed: removed, Label: e.Def.Label, ID: e.Def.ID, Grant: e.Def.Grant, Conn: e.Def.Connection, Username: e.Def.Username, CreatedAt: e.Def.CreatedAt}
	if e.Token != nil {
		k.Token = e.Token.Redacted()
		k.Masked = text.Mask(e.Token.AccessToken)
		k.HasRefreshToken = e.Token.RefreshToken != ""
	}
	return k
}

func catalogKey(team string) string { return prefix(team) + "catalog" }

// snapshot is the team's keys and tokens read from etcd at one revision.
type snapshot struct {
	roster  roster
	entries map[string]*cacheEntry
	catRev  int64
	rev     int64 // etcd's revision the read saw (a watch goes on from rev+1)
}

// read loads the whole team from etcd, accepts its roster, verifies and
// decrypts every item; an item no member signed is said and left aside (the
// others are used). It refreshes the local cache with what it read.
func (h *handle) read(ctx context.Context) (*snapshot, error) {
	cli, err := h.client()
	if err != nil {
		return nil, err
	}
	kvs, rev, err := cli.List(ctx, prefix(h.name()))
	if err != nil {
		return nil, h.etcdErr(err)
	}
	h.freshSeen()
	s := &snapshot{entries: map[string]*cacheEntry{}, rev: rev}
	t := h.sortKVs(kvs)
	if t.roster == nil {
		return nil, &Error{Team: h.name(), Msg: "etcd holds no such team", Kind: ErrNoTeam}
	}
	hist := func(v int64) []byte { return t.history[v] }
	if s.roster, err = h.accept(ctx, t.roster.Value, t.roster.Rev, rev, hist, false); err != nil {
		return nil, err
	}
	if err := h.openCaughtUp(s, t, hist); err != nil {
		return nil, err
	}
	if !h.hasMe(s.roster) {
		h.markRemoved(ctx)
		return nil, h.notMember()
	}
	h.saveSeen()
	_ = h.updateCache(ctx, func(c *cacheFile) {
		c.Keys, c.SyncedAt, c.Removed = s.entries, h.e.opts.Now().UTC(), false
	})
	return s, nil
}

// teamKVs are a team's keys in etcd by what they hold: the roster, the
// catalog, the former rosters by version, key definitions and tokens.
type teamKVs struct {
	roster, catalog *team.KV
	history         map[int64][]byte
	keys, tokens    []*team.KV
}

// sortKVs sorts the team's keys (a listing of its prefix) by what they
// hold; others are left out.
func (h *handle) sortKVs(kvs []team.KV) teamKVs {
	t := teamKVs{history: map[int64][]byte{}}
	rosters := prefix(h.name()) + "rosters/"
	for i := range kvs {
		kv := &kvs[i]
		k := kv.Key
		switch {
		case k == rosterKey(h.name()):
			t.roster = kv
		case k == catalogKey(h.name()):
			t.catalog = kv
		case strings.HasPrefix(k, rosters):
			var v int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(k, rosters), "%d", &v); err == nil {
				t.history[v] = kv.Value
			}
		case strings.HasPrefix(k, keysPrefix(h.name())):
			t.keys = append(t.keys, kv)
		case strings.HasPrefix(k, tokensPrefix(h.name())):
			t.tokens = append(t.tokens, kv)
		}
	}
	return t
}

// openCaughtUp opens every item of t into s (openAll); an item a member
// signed for a later roster than this machine's takes that roster through
// the chain first, and every item is read again.
func (h *handle) openCaughtUp(s *snapshot, t teamKVs, hist func(int64) []byte) error {
	for {
		err := h.openAll(s, t.catalog, t.keys, t.tokens)
		var be *team.BehindError
		if !errors.As(err, &be) {
			return err
		}
		if s.roster, err = h.catchUp(s.roster, be, hist); err != nil {
			return err
		}
	}
}

// openAll verifies and decrypts the catalog entry, keys and tokens of a
// read into s.entries; an item no member signed (or a rollback) is said and
// left aside. A *team.BehindError stops it.
func (h *handle) openAll(s *snapshot, catalogKV *team.KV, keys, tokens []*team.KV) error {
	s.entries = map[string]*cacheEntry{}
	if !h.hasMe(s.roster) {
		return nil
	}
	if catalogKV != nil {
		s.catRev = catalogKV.Rev
		if _, _, err := team.OpenItem(h.name(), kindCatalog, kindCatalog, s.roster.Roster, catalogKV.Value); err != nil {
			if errors.Is(err, team.ErrBehind) {
				return err
			}
			h.warnRefused(h.refused("the catalog entry", err))
		}
	}
	for _, kv := range keys {
		id := idOf(kv.Key, keysPrefix(h.name()))
		var d Definition
		if err := h.openItem(s.roster, kindKey, id, kv.Value, &d); err != nil {
			if isRefused(err) {
				h.warnRefused(err)
				continue
			}
			return err
		}
		if d.ID != id {
			h.warnRefused(h.refused("key "+id, text.Errorf("it holds the definition of key %s: %w", d.ID, team.ErrForged)))
			continue
		}
		s.entries[id] = &cacheEntry{Def: d}
	}
	for _, kv := range tokens {
		id := idOf(kv.Key, tokensPrefix(h.name()))
		e := s.entries[id]
		if e == nil {
			continue
		}
		var ts auth.TokenSet
		if err := h.openItem(s.roster, kindToken, id, kv.Value, &ts); err != nil {
			if isRefused(err) {
				h.warnRefused(err)
				continue
			}
			return err
		}
		e.Token, e.TokenRev = &ts, kv.Rev
	}
	return nil
}

// decode opens an item's ciphertext (verified first: openItem) and
// unmarshals it.
func (h *handle) decode(data []byte, v any) error {
	plain, err := open(data, h.id)
	if errors.Is(err, errNotRecipient) {
		return h.notMember()
	}
	if err != nil {
		return &Error{Team: h.name(), Msg: err.Error()}
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return &Error{Team: h.name(), Msg: "an item in etcd is damaged"}
	}
	return nil
}

// Keys lists the team's keys from etcd (the cache is refreshed); when etcd
// does not answer, the cached list is returned with the error.
func (e *Engine) Keys(ctx context.Context, team string) ([]Key, error) {
	h, err := e.open(team)
	if err != nil {
		return nil, err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	var entries map[string]*cacheEntry
	removed := false
	s, err := h.read(bctx)
	if err == nil {
		entries = s.entries
	} else {
		c := h.readCache()
		entries, removed = c.Keys, c.Removed
	}
	keys := make([]Key, 0, len(entries))
	for _, ce := range entries {
		keys = append(keys, h.key(ce, removed))
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Label, b.Label) })
	return keys, err
}

// CachedKeys lists the team's keys from the local cache alone (no etcd).
func (e *Engine) CachedKeys(team string) ([]Key, error) {
	h, err := e.open(team)
	if err != nil {
		return nil, err
	}
	keys := []Key{}
	c := h.readCache()
	for _, ce := range c.Keys {
		keys = append(keys, h.key(ce, c.Removed))
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Label, b.Label) })
	return keys, nil
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateKey obtains the key's first token (which checks its credentials)
// and writes the definition and the token, encrypted to the roster, in one
// transaction that fails when the catalog or the roster changed meanwhile.
func (e *Engine) CreateKey(ctx context.Context, team string, nk NewKey) (Key, error) {
	if e.opts.Auth == nil {
		return Key{}, errors.New("team: no auth client")
	}
	if nk.Label == "" || strings.ContainsAny(nk.Label, "/\n\r\t") {
		return Key{}, text.Errorf("label %q: must be non-empty without / or line breaks", text.Sanitize(nk.Label))
	}
	h, err := e.open(team)
	if err != nil {
		return Key{}, err
	}
	defer h.close()
	if _, err := auth.GrantFor(nk.Grant); err != nil {
		return Key{}, err
	}
	d := nk.Definition
	d.RememberPassword = nk.Password != ""
	def := Definition{ID: newID(), Label: nk.Label, Definition: d, ClientSecret: nk.ClientSecret, Password: nk.Password, CreatedAt: e.opts.Now().UTC()}
	bctx, cancel := h.bound(ctx)
	defer cancel()
	s, err := h.read(bctx)
	if err != nil {
		return Key{}, err
	}
	if (&cacheFile{Keys: s.entries}).ByLabel(nk.Label) != nil {
		return Key{}, text.Errorf("team %s: label %s already in use", team, nk.Label)
	}
	req := def.Request()
	req.Prompt = nk.Prompt
	ts, err := e.opts.Auth.Obtain(ctx, def.Grant, req)
	if err != nil {
		return Key{}, err
	}
	kv, err := h.sealItem(s.roster, kindKey, def.ID, def)
	if err != nil {
		return Key{}, err
	}
	tv, err := h.sealItem(s.roster, kindToken, def.ID, ts)
	if err != nil {
		return Key{}, err
	}
	bctx2, cancel2 := h.bound(ctx)
	defer cancel2()
	cli, _ := h.client()
	ok, rev, err := h.commit(bctx2, cli, []cond{
		revIs(rosterKey(team), s.roster.Rev),
		revIs(catalogKey(team), s.catRev),
	}, []op{
		put(keyKey(team, def.ID), kv),
		put(tokenKey(team, def.ID), tv),
		put(catalogKey(team), h.signCatalog(s.roster, def.ID)),
	})
	if err != nil {
		return Key{}, h.etcdErr(err)
	}
	if !ok {
		return Key{}, &Error{Team: team, Msg: "the team changed while the key was created; try again"}
	}
	ce := &cacheEntry{Def: def, Token: ts, TokenRev: rev}
	_ = h.updateCache(ctx, func(c *cacheFile) { c.Keys[def.ID] = ce })
	return h.key(ce, false), nil
}

// RemoveKey deletes a team key and its token for every member.
func (e *Engine) RemoveKey(ctx context.Context, team, label string) error {
	return e.catalogChange(ctx, team, label, func(h *handle, s *snapshot, ce *cacheEntry) ([]op, error) {
		return []op{del(keyKey(team, ce.Def.ID)), del(tokenKey(team, ce.Def.ID))}, nil
	})
}

// RenameKey gives a team key a new label for every member.
func (e *Engine) RenameKey(ctx context.Context, team, label, newLabel string) error {
	if newLabel == "" || strings.ContainsAny(newLabel, "/\n\r\t") {
		return text.Errorf("label %q: must be non-empty without / or line breaks", text.Sanitize(newLabel))
	}
	return e.catalogChange(ctx, team, label, func(h *handle, s *snapshot, ce *cacheEntry) ([]op, error) {
		if (&cacheFile{Keys: s.entries}).ByLabel(newLabel) != nil {
			return nil, text.Errorf("team %s: label %s already in use", team, newLabel)
		}
		d := ce.Def
		d.Label = newLabel
		v, err := h.sealItem(s.roster, kindKey, d.ID, d)
		if err != nil {
			return nil, err
		}
		return []op{put(keyKey(team, d.ID), v)}, nil
	})
}

// SetClientSecret replaces team key label's client secret for every member.
func (e *Engine) SetClientSecret(ctx context.Context, team, label, secret string) error {
	return e.catalogChange(ctx, team, label, func(h *handle, s *snapshot, ce *cacheEntry) ([]op, error) {
		d := ce.Def
		d.ClientSecret = secret
		v, err := h.sealItem(s.roster, kindKey, d.ID, d)
		if err != nil {
			return nil, err
		}
		return []op{put(keyKey(team, d.ID), v)}, nil
	})
}

func (e *Engine) catalogChange(ctx context.Context, team, label string, ops func(*handle, *snapshot, *cacheEntry) ([]op, error)) error {
	h, err := e.open(team)
	if err != nil {
		return err
	}
	defer h.close()
	bctx, cancel := h.bound(ctx)
	defer cancel()
	s, err := h.read(bctx)
	if err != nil {
		return err
	}
	ce := (&cacheFile{Keys: s.entries}).ByLabel(label)
	if ce == nil {
		return text.Errorf("team %s: no key %s: %w", team, label, ErrKeyNotFound)
	}
	then, err := ops(h, s, ce)
	if err != nil {
		return err
	}
	cli, _ := h.client()
	ok, _, err := h.commit(bctx, cli, []cond{
		revIs(rosterKey(team), s.roster.Rev),
		revIs(catalogKey(team), s.catRev),
	}, append(then, put(catalogKey(team), h.signCatalog(s.roster, ce.Def.ID))))
	if err != nil {
		return h.etcdErr(err)
	}
	if !ok {
		return &Error{Team: team, Msg: "the team changed meanwhile; try again"}
	}
	_, _ = h.read(bctx) // refresh the cache
	return nil
}
