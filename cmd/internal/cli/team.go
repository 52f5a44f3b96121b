package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// exitEtcdUnavailable: a team key's etcd did not answer within the bound and
// no valid token was cached.
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
				f.engErr = usageErrorf("%s=%q is not a duration such as 3s", envTeamTimeout, text.Safe(v))
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
			return tc, usageErrorf("--etcd %s is plain http to a host that is not this one: the etcd password and every request would cross the network in the clear; use https (with --etcd-ca), or --etcd-insecure to accept that", text.Safe(plain[0]))
		}
		tc.Insecure = true
	}
	return tc, nil
}

func newCmdTeam(f *factory) *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:   "team",
		Short: "Share keys with a team or a fleet through etcd (end-to-end encrypted)",
		Long: `A team is a prefix of an etcd cluster. Its keys and tokens are encrypted with
age to every member's recipient; etcd holds ciphertext only. One token request
serves every machine of the team. Team keys are addressed as TEAM/LABEL.`,
	})
	var conn teamConnFlags
	var name string
	join := func(create bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			tc, err := conn.conn(args[0])
			if err != nil {
				return err
			}
			if !store.ValidTeamName(tc.Name) {
				return usageErrorf("team name %s: use letters, digits, - and _ (at most 40)", text.ShellQuote(tc.Name))
			}
			eng, err := f.Team() // first: it may hand the command on
			if err != nil {
				return err
			}
			password := ""
			if tc.User != "" {
				password, err = readSecret(f.IO, f.Getenv, secretSource{What: "etcd password", Env: envEtcdPassword, Prompt: "etcd password for " + text.Safe(tc.User) + ": ", Hint: "set " + envEtcdPassword})
				if err != nil {
					return err
				}
				f.Secrets.Add(password)
			}
			if tc.Insecure {
				fmt.Fprintf(f.IO.ErrOut, "shipkey: warning: team %s: --etcd-insecure: plain http to %s; the etcd password and every request cross the network in the clear (the team's items stay encrypted and signed)\n", tc.Name, text.Safe(strings.Join(team.PlainRemote(tc.Endpoints), ",")))
			}
			opts := team.JoinOptions{Conn: tc, EtcdPassword: password, Name: name}
			if create {
				me, err := eng.Init(cmd.Context(), opts)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.ErrOut, "Created team %s with this machine as member %s\n", tc.Name, text.Safe(me.Name))
				fmt.Fprintln(f.IO.Out, me.Recipient)
				return nil
			}
			card, err := eng.Join(cmd.Context(), opts)
			if err != nil {
				return err
			}
			ms, err := eng.Members(cmd.Context(), tc.Name)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Joined team %s and pinned its roster (trust on first use): compare these fingerprints with `shipkey team members %s` on a member's machine:\n", tc.Name, tc.Name)
			for _, m := range ms {
				fmt.Fprintf(f.IO.ErrOut, "  %s  %s\n", m.Fingerprint(), text.Safe(m.Name))
			}
			fmt.Fprintf(f.IO.ErrOut, "Then ask a member to run:\n  shipkey team add %s %s\n", tc.Name, card)
			fmt.Fprintln(f.IO.Out, card)
			return nil
		}
	}
	initCmd := &cobra.Command{
		Use:   "init TEAM --etcd URL[,URL…]",
		Short: "Create a team in etcd with this machine as its first member",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE:  join(true),
	}
	conn.add(initCmd)
	initCmd.Flags().StringVar(&name, "name", "", "this member's name in the team")
	var jconn teamConnFlags
	joinCmd := &cobra.Command{
		Use:   "join TEAM --etcd URL[,URL…]",
		Short: "Record a team's etcd here and print this machine's recipient (age1…) for a member to add",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn = jconn
			return join(false)(cmd, args)
		},
	}
	jconn.add(joinCmd)

	var addName string
	addCmd := &cobra.Command{
		Use:   "add TEAM MEMBER-LINE [--name N]",
		Short: "Add a member: every key and token is re-encrypted to include it",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := f.Team()
			if err != nil {
				return err
			}
			m, err := eng.AddMember(cmd.Context(), args[0], args[1], addName)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Added %s (%s) to team %s; every key and token is now encrypted to it too\n", text.Safe(m.Name), m.Recipient, args[0])
			return nil
		},
	}
	addCmd.Flags().StringVar(&addName, "name", "", "the member's name (for team members and team remove; default: its host name)")
	removeCmd := &cobra.Command{
		Use:   "remove TEAM RECIPIENT|NAME",
		Short: "Remove a member: every key and token is re-encrypted without it",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := f.Team()
			if err != nil {
				return err
			}
			m, err := eng.RemoveMember(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Removed %s from team %s. It can no longer read or sign anything written from now on, but it saw every secret and token of the team until now: rotate the client secrets (and passwords) of the team's keys at the realm, then: shipkey keys set-secret %s/LABEL\n", text.Safe(m.Name), args[0], args[0])
			return nil
		},
	}
	membersCmd := &cobra.Command{
		Use:   "members TEAM",
		Short: "List a team's members",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := f.Team()
			if err != nil {
				return err
			}
			ms, err := eng.Members(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			st, err := f.Store()
			if err != nil {
				return err
			}
			here, _ := st.Team(args[0])
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\tNAME\tFINGERPRINT\tRECIPIENT\tADDED")
			for _, m := range ms {
				mark := ""
				if m.Recipient == here.Recipient {
					mark = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, text.Safe(m.Name), m.Fingerprint(), text.Safe(m.Recipient), text.Stamp(m.AddedAt))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(f.IO.ErrOut, "* this machine")
			return nil
		},
	}
	lsCmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the teams this machine belongs to",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.Store()
			if err != nil {
				return err
			}
			teams, err := st.Teams()
			if err != nil {
				return err
			}
			if len(teams) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "No teams yet: shipkey team init TEAM --etcd URL (or team join)")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TEAM\tETCD\tRECIPIENT")
			for _, t := range teams {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, text.Safe(strings.Join(t.Endpoints, ",")), t.Recipient)
			}
			return tw.Flush()
		},
	}
	leaveCmd := &cobra.Command{
		Use:   "leave TEAM",
		Short: "Forget a team on this machine (its connection, member identity and cache)",
		Long: `Forget a team on this machine: its connection, this machine's member identity,
the local cache and the pinned roster. The roster still names this machine
until another member runs shipkey team remove TEAM NAME (a member does not
remove itself: it signs every re-encrypted item).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := f.Team()
			if err != nil {
				return err
			}
			if err := eng.Leave(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "Left team %s on this machine. Ask a member to run: shipkey team remove %s NAME (shipkey team members %s shows the names)\n", args[0], args[0], args[0])
			return nil
		},
	}
	cmd.AddCommand(initCmd, joinCmd, addCmd, removeCmd, membersCmd, leaveCmd, lsCmd)
	return cmd
}
