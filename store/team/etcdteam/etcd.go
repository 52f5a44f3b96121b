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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

// dial builds an etcd client for tc. It does not wait for a connection:
// every call is bounded by its context.
func dial(tc store.TeamConn, password string) (*clientv3.Client, error) {
	if plain := team.PlainRemote(tc.Endpoints); len(plain) > 0 && !tc.Insecure {
		return nil, fmt.Errorf("team %s: %s is plain http to a host that is not this one (the etcd password and every request in the clear): use https with --etcd-ca, or join again with --etcd-insecure", tc.Name, text.Safe(plain[0]))
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
		return nil, fmt.Errorf("team %s: etcd client: %s", tc.Name, text.Safe(err.Error()))
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
			return nil, fmt.Errorf("team %s: --etcd-ca %s holds no PEM certificate", tc.Name, text.Safe(tc.CA))
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
