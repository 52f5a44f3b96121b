// Package etcdteam is the team storage driver on etcd (team.Driver): the
// etcd client v3 and its concurrency mutex on a lease. The team protocol
// itself (roster, signatures, encryption, cache, fleet lock, watch) is
// package engine, written over team.Driver; New is that engine on etcd.
package etcdteam

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/engine"
)

// New returns the team engine on etcd; nothing is dialled until a team is
// used.
func New(opts team.Options) team.Engine { return engine.New(opts, Dial) }

// Dial returns the driver for tc: an etcd client that does not wait for a
// connection (every call is bounded by its context).
func Dial(tc store.TeamConn, password string) (team.Driver, error) {
	cli, err := dial(tc, password)
	if err != nil {
		return nil, err
	}
	return &Driver{cli: cli}, nil
}

// NewDriver is the driver over a client the caller dialled (tests).
func NewDriver(cli *clientv3.Client) *Driver { return &Driver{cli: cli} }

// Driver is team.Driver on etcd: revisions are etcd's (a key's
// ModRevision), a Commit is one transaction, a Lock a concurrency mutex on
// a lease.
type Driver struct {
	cli *clientv3.Client
}

var _ team.Driver = (*Driver)(nil)

// wrap marks an error that means etcd did not answer in time.
func wrap(err error) error {
	if err != nil && unavailable(err) {
		return fmt.Errorf("%w: %w", team.ErrUnavailable, err)
	}
	return err
}

func kvOf(k string, v []byte, rev int64) team.KV { return team.KV{Key: k, Value: v, Rev: rev} }

// Get reads keys in one transaction (one revision).
func (d *Driver) Get(ctx context.Context, keys ...string) ([]*team.KV, int64, error) {
	if len(keys) == 1 {
		resp, err := d.cli.Get(ctx, keys[0])
		if err != nil {
			return nil, 0, wrap(err)
		}
		out := []*team.KV{nil}
		if len(resp.Kvs) == 1 {
			kv := kvOf(keys[0], resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
			out[0] = &kv
		}
		return out, resp.Header.Revision, nil
	}
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k)
	}
	resp, err := d.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, 0, wrap(err)
	}
	out := make([]*team.KV, len(keys))
	for i, r := range resp.Responses {
		if kvs := r.GetResponseRange().Kvs; len(kvs) == 1 {
			kv := kvOf(keys[i], kvs[0].Value, kvs[0].ModRevision)
			out[i] = &kv
		}
	}
	return out, resp.Header.Revision, nil
}

var _ team.FormerReader = (*Driver)(nil)

// GetAt reads key at revision rev (etcd keeps every revision until a
// compaction).
func (d *Driver) GetAt(ctx context.Context, key string, rev int64) (*team.KV, error) {
	resp, err := d.cli.Get(ctx, key, clientv3.WithRev(rev))
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil, team.ErrCompacted
	}
	if err != nil {
		return nil, wrap(err)
	}
	if len(resp.Kvs) != 1 {
		return nil, nil
	}
	kv := kvOf(key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	return &kv, nil
}

// List reads the prefix with one range request.
func (d *Driver) List(ctx context.Context, prefix string) ([]team.KV, int64, error) {
	resp, err := d.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, wrap(err)
	}
	out := make([]team.KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		out[i] = kvOf(string(kv.Key), kv.Value, kv.ModRevision)
	}
	return out, resp.Header.Revision, nil
}

// Commit is one etcd transaction.
func (d *Driver) Commit(ctx context.Context, conds []team.Cond, ops []team.Op) (bool, int64, error) {
	cmps := make([]clientv3.Cmp, 0, len(conds))
	for _, c := range conds {
		switch c.Kind {
		case team.RevIs:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(c.Key), "=", c.Rev))
		case team.Exists:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(c.Key), ">", 0))
		case team.NotAfter:
			cmp := clientv3.Compare(clientv3.ModRevision(c.Key), "<", c.Rev+1)
			if c.Prefix {
				cmp = cmp.WithPrefix()
			}
			cmps = append(cmps, cmp)
		case team.Held:
			// concurrency.Mutex.IsOwner: the mutex's own key still has the
			// create revision it was granted at.
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(c.Key), "=", c.Rev))
		default:
			return false, 0, fmt.Errorf("etcd driver: unknown condition %d", c.Kind)
		}
	}
	then := make([]clientv3.Op, len(ops))
	for i, o := range ops {
		if o.Delete {
			then[i] = clientv3.OpDelete(o.Key)
		} else {
			then[i] = clientv3.OpPut(o.Key, string(o.Value))
		}
	}
	resp, err := d.cli.Txn(ctx).If(cmps...).Then(then...).Commit()
	if err != nil {
		return false, 0, wrap(err)
	}
	return resp.Succeeded, resp.Header.Revision, nil
}

// Watch is an etcd watch that requires a leader (a member cut off from the
// others ends it rather than staying silent).
func (d *Driver) Watch(ctx context.Context, prefix string, from int64) <-chan team.WatchBatch {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	out := make(chan team.WatchBatch)
	go func() {
		defer close(out)
		for resp := range d.cli.Watch(clientv3.WithRequireLeader(ctx), prefix, opts...) {
			b := team.WatchBatch{Compacted: resp.CompactRevision != 0}
			for _, ev := range resp.Events {
				b.Keys = append(b.Keys, string(ev.Kv.Key))
				b.Revs = append(b.Revs, ev.Kv.ModRevision)
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.Compacted {
				return
			}
		}
	}()
	return out
}

// Lock is a concurrency mutex on a lease of its own: granted with ttl, kept
// alive until Unlock, revoked there.
func (d *Driver) Lock(ctx context.Context, name string, ttl time.Duration) (team.Lock, error) {
	lease, err := d.cli.Grant(ctx, int64(max(ttl/time.Second, 1)))
	if err != nil {
		return nil, wrap(err)
	}
	sess, err := concurrency.NewSession(d.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		defer rcancel()
		_, _ = d.cli.Revoke(rctx, lease.ID)
		return nil, wrap(err)
	}
	l := &lock{cli: d.cli, sess: sess, mu: concurrency.NewMutex(sess, name)}
	if err := l.mu.Lock(ctx); err != nil {
		l.Unlock()
		return nil, wrap(err)
	}
	return l, nil
}

type lock struct {
	cli  *clientv3.Client
	sess *concurrency.Session
	mu   *concurrency.Mutex
}

// Held is the mutex's IsOwner as a team.Cond: its key at the create
// revision it was granted.
func (l *lock) Held() team.Cond {
	owner := l.mu.IsOwner()
	return team.Cond{Kind: team.Held, Key: l.mu.Key(), Rev: owner.GetCompare().GetCreateRevision()}
}

func (l *lock) Unlock() {
	rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
	defer rcancel()
	_, _ = l.cli.Revoke(rctx, l.sess.Lease())
	l.sess.Orphan()
}

// Close closes the etcd client.
func (d *Driver) Close() error { return d.cli.Close() }

// dial builds an etcd client for tc. It does not wait for a connection:
// every call is bounded by its context.
func dial(tc store.TeamConn, password string) (*clientv3.Client, error) {
	if plain := team.PlainRemote(tc.Endpoints); len(plain) > 0 && !tc.Insecure {
		return nil, text.Errorf("team %s: %s is plain http to a host that is not this one (the etcd password and every request in the clear): use https with --etcd-ca, or join again with --etcd-insecure", tc.Name, plain[0])
	}
	cfg := clientv3.Config{
		Endpoints:            tc.Endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
		Username:             tc.User,
		Password:             password,
	}
	if tc.CA != "" || tc.Cert != "" {
		tlsCfg, err := tlsConfig(tc)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tlsCfg
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, text.Errorf("team %s: etcd client: %s", tc.Name, err.Error())
	}
	return cli, nil
}

func tlsConfig(tc store.TeamConn) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if tc.CA != "" {
		pem, err := os.ReadFile(tc.CA)
		if err != nil {
			return nil, fmt.Errorf("team %s: --etcd-ca: %w", tc.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, text.Errorf("team %s: --etcd-ca %s holds no PEM certificate", tc.Name, tc.CA)
		}
		cfg.RootCAs = pool
	}
	if tc.Cert != "" || tc.Key != "" {
		if tc.Cert == "" || tc.Key == "" {
			return nil, fmt.Errorf("team %s: --etcd-cert and --etcd-key go together", tc.Name)
		}
		cert, err := tls.LoadX509KeyPair(tc.Cert, tc.Key)
		if err != nil {
			return nil, fmt.Errorf("team %s: client certificate: %w", tc.Name, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// unavailable reports whether err means etcd could not answer in time (no
// connection, no quorum, a leader election that outlasted the bound).
func unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	msg := err.Error()
	for _, transient := range []string{"no leader", "leader changed", "context deadline exceeded", "too many requests", "timed out"} {
		if strings.Contains(msg, transient) {
			return true
		}
	}
	return false
}
