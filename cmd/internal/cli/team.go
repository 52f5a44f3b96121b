package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// exitEtcdUnavailable: a team key's etcd did not answer within the bound and
// no valid token was cached; or this machine may be behind the team's
// roster and hands out nothing (team.ErrBehind).
const exitEtcdUnavailable = 4

// envEtcdPassword carries the etcd RBAC password of --etcd-user.
const envEtcdPassword = "SHIPKEY_ETCD_PASSWORD"

// envTeamTimeout overrides every team's bound on etcd work ("3s").
const envTeamTimeout = "SHIPKEY_TEAM_TIMEOUT"

// Team returns the team engine, built on the store once. In a program
// without one (cmd/shipkey) it returns keys.ErrNoTeamEngine, and runWith
// hands the whole command to TeamBinary (program.go); ask for it before
// reading stdin.
func (f *factory) Team() (team.Engine, error) {
	if newTeamEngine == nil {
		return nil, keys.ErrNoTeamEngine
	}
	f.engOnce.Do(func() {
		st, err := f.Store()
		if err != nil {
			f.engErr = err
			return
		}
		a, err := f.Auth()
		if err != nil {
			f.engErr = err
			return
		}
		opts := team.Options{Store: st, Auth: a, Now: f.Now, Warn: f.Diag}
		if v := f.Getenv(envTeamTimeout); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				f.engErr = usageErrorf("%s=%q is not a duration such as 3s", envTeamTimeout, text.Sanitize(v))
				return
			}
			opts.Timeout = d
		}
		f.eng = newTeamEngine(opts)
	})
	return f.eng, f.engErr
}

// teamConnFlags are the etcd connection options.
type teamConnFlags struct {
	Endpoints string
	CA        string
	Cert      string
	Key       string
	User      string
	Timeout   time.Duration
	Insecure  bool
}

func (c *teamConnFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&c.Endpoints, "etcd", "", "etcd client URLs, comma-separated (required)")
	fl.StringVar(&c.CA, "etcd-ca", "", "PEM file of the CA that signs the etcd servers' certificates")
	fl.StringVar(&c.Cert, "etcd-cert", "", "client certificate (PEM) for etcd client TLS")
	fl.StringVar(&c.Key, "etcd-key", "", "its private key (PEM)")
	fl.StringVar(&c.User, "etcd-user", "", "etcd RBAC user; the password comes from "+envEtcdPassword+" or a prompt")
	fl.DurationVar(&c.Timeout, "etcd-timeout", 0, "bound on each command's etcd work (default 5s)")
	fl.BoolVar(&c.Insecure, "etcd-insecure", false, "allow plain http:// endpoints that are not loopback (the etcd password and requests in the clear)")
}

func (c *teamConnFlags) conn(name string) (store.TeamConn, error) {
	if strings.TrimSpace(c.Endpoints) == "" {
		return store.TeamConn{}, usageErrorf("missing --etcd URL[,URL…]")
	}
	tc := store.TeamConn{Name: name, CA: c.CA, Cert: c.Cert, Key: c.Key, User: c.User}
	for _, u := range strings.Split(c.Endpoints, ",") {
		if u = strings.TrimSpace(u); u != "" {
			tc.Endpoints = append(tc.Endpoints, u)
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		return tc, usageErrorf("--etcd-cert and --etcd-key go together")
	}
	if c.Timeout > 0 {
		tc.Timeout = c.Timeout.String()
	}
	if plain := team.PlainRemote(tc.Endpoints); len(plain) > 0 {
		if !c.Insecure {
			return tc, usageErrorf("--etcd %s is plain http to a host that is not this one: the etcd password and every request would cross the network in the clear; use https (with --etcd-ca), or --etcd-insecure to accept that", plain[0])
		}
		tc.Insecure = true
	}
	return tc, nil
}
