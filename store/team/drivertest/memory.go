package drivertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// Memory is a team.Driver in memory, shared by every handle Dial gives:
// one store for a whole test, as one etcd cluster is for many machines.
// Leases do not run out (its holders do not die).
type Memory struct {
	mu      sync.Mutex
	rev     int64
	kvs     map[string]memKV
	created map[string]int64 // a key's create revision (locks)
	changed chan struct{}    // closed and replaced at every write
	history []memEvent
}

type memKV struct {
	value []byte
	rev   int64
}

type memEvent struct {
	key string
	rev int64
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{kvs: map[string]memKV{}, created: map[string]int64{}, changed: make(chan struct{})}
}

// Dialer is an engine.Dialer over m (the connection is ignored).
func (m *Memory) Dialer() func(store.TeamConn, string) (team.Driver, error) {
	return func(store.TeamConn, string) (team.Driver, error) { return memHandle{m}, nil }
}

// memHandle is one connection: Close ends nothing shared.
type memHandle struct{ *Memory }

func (memHandle) Close() error { return nil }

func live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", team.ErrUnavailable, err)
	}
	return nil
}

func (m *Memory) Get(ctx context.Context, keys ...string) ([]*team.KV, int64, error) {
	if err := live(ctx); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*team.KV, len(keys))
	for i, k := range keys {
		if v, ok := m.kvs[k]; ok {
			out[i] = &team.KV{Key: k, Value: slices.Clone(v.value), Rev: v.rev}
		}
	}
	return out, m.rev, nil
}

func (m *Memory) List(ctx context.Context, prefix string) ([]team.KV, int64, error) {
	if err := live(ctx); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []team.KV
	for k, v := range m.kvs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, team.KV{Key: k, Value: slices.Clone(v.value), Rev: v.rev})
		}
	}
	slices.SortFunc(out, func(a, b team.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, m.rev, nil
}

func (m *Memory) holds(c team.Cond) bool {
	switch c.Kind {
	case team.RevIs:
		return m.kvs[c.Key].rev == c.Rev
	case team.Exists:
		_, ok := m.kvs[c.Key]
		return ok
	case team.NotAfter:
		for k, v := range m.kvs {
			if (k == c.Key || c.Prefix && strings.HasPrefix(k, c.Key)) && v.rev > c.Rev {
				return false
			}
		}
		return true
	case team.Held:
		_, ok := m.kvs[c.Key]
		return ok && m.created[c.Key] == c.Rev
	}
	return false
}

func (m *Memory) Commit(ctx context.Context, conds []team.Cond, ops []team.Op) (bool, int64, error) {
	if err := live(ctx); err != nil {
		return false, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range conds {
		if !m.holds(c) {
			return false, m.rev, nil
		}
	}
	if len(ops) > 0 {
		m.write(ops)
	}
	return true, m.rev, nil
}

// write applies ops at the next revision (m.mu held).
func (m *Memory) write(ops []team.Op) {
	m.rev++
	for _, o := range ops {
		if o.Delete {
			if _, ok := m.kvs[o.Key]; !ok {
				continue
			}
			delete(m.kvs, o.Key)
			delete(m.created, o.Key)
		} else {
			if _, ok := m.kvs[o.Key]; !ok {
				m.created[o.Key] = m.rev
			}
			m.kvs[o.Key] = memKV{value: slices.Clone(o.Value), rev: m.rev}
		}
		m.history = append(m.history, memEvent{o.Key, m.rev})
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *Memory) Watch(ctx context.Context, prefix string, from int64) <-chan team.WatchBatch {
	out := make(chan team.WatchBatch)
	go func() {
		defer close(out)
		m.mu.Lock()
		if from <= 0 {
			from = m.rev + 1
		}
		m.mu.Unlock()
		next := 0 // index into history of the first event not sent
		for {
			m.mu.Lock()
			var b team.WatchBatch
			for ; next < len(m.history); next++ {
				if e := m.history[next]; e.rev >= from && strings.HasPrefix(e.key, prefix) {
					b.Keys, b.Revs = append(b.Keys, e.key), append(b.Revs, e.rev)
				}
			}
			changed := m.changed
			m.mu.Unlock()
			if len(b.Keys) > 0 {
				select {
				case out <- b:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Lock is a key of its own under name, queued by create revision as etcd's
// mutex does: the lowest holds the lock.
func (m *Memory) Lock(ctx context.Context, name string, _ time.Duration) (team.Lock, error) {
	if err := live(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	key := fmt.Sprintf("%s/%016x", name, m.rev+1)
	m.write([]team.Op{team.Put(key, nil)})
	l := &memLock{m: m, key: key, rev: m.created[key]}
	m.mu.Unlock()
	for {
		m.mu.Lock()
		first := true
		for k := range m.kvs {
			if strings.HasPrefix(k, name+"/") && m.created[k] < l.rev {
				first = false
			}
		}
		changed := m.changed
		m.mu.Unlock()
		if first {
			return l, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			l.Unlock()
			return nil, fmt.Errorf("%w: %w", team.ErrUnavailable, ctx.Err())
		}
	}
}

type memLock struct {
	m   *Memory
	key string
	rev int64
}

func (l *memLock) Held() team.Cond { return team.Cond{Kind: team.Held, Key: l.key, Rev: l.rev} }

func (l *memLock) Unlock() {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.m.created[l.key] == l.rev {
		l.m.write([]team.Op{team.Delete(l.key)})
	}
}
