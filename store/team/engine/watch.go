package engine

import (
	"context"
	"strings"
	"time"
)

// testHookWatchRead runs between Watch's first read and its watch (tests
// change the team there).
var testHookWatchRead = func() {}

// Watch follows team's prefix in etcd until ctx ends: whenever a key is
// added, renamed, refreshed or removed (on any machine) or the roster
// changes, the local cache is rebuilt from etcd and changed is called. Lock
// traffic is ignored. A broken watch is re-established after a pause; Watch
// returns only when ctx ends, or at once when the team cannot be opened.
func (e *Engine) Watch(ctx context.Context, team string, changed func()) error {
	h, err := e.open(team)
	if err != nil {
		return err
	}
	defer h.close()
	cli, err := h.client()
	if err != nil {
		return err
	}
	locks := prefix(team) + "locks/"
	// rev is the revision the cache is known to reflect: each watch goes on
	// from rev+1, so a change between a read and the watch that follows it
	// is never missed (it was, under load: a key created then showed only
	// with the next change).
	var rev int64
	sync := func() {
		rctx, cancel := h.bound(ctx)
		defer cancel()
		if s, err := h.read(rctx); err == nil {
			rev = max(rev, s.rev)
			changed()
		}
	}
	sync()
	testHookWatchRead()
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		from := int64(0)
		if rev > 0 {
			from = rev + 1
		}
		for b := range cli.Watch(wctx, prefix(team), from) {
			if b.Compacted {
				break // rev+1 is compacted away: read again, watch from there
			}
			relevant := false
			for i, k := range b.Keys {
				if !strings.HasPrefix(k, locks) {
					relevant = true
				}
				rev = max(rev, b.Revs[i])
			}
			if relevant {
				sync()
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			sync() // catch up on what the broken watch missed
		}
	}
	return nil
}

// CachedToken is a team key's token from this machine's cache (no etcd): for
// display. Nil when none is cached.
func (e *Engine) CachedToken(team, label string) (*Key, string, error) {
	h, err := e.open(team)
	if err != nil {
		return nil, "", err
	}
	c := h.readCache()
	ce := c.ByLabel(label)
	if ce == nil {
		return nil, "", ErrKeyNotFound
	}
	k := h.key(ce, c.Removed)
	tok := ""
	if ce.Token != nil {
		tok = ce.Token.AccessToken
	}
	return &k, tok, nil
}
