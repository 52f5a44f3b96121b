package cli

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
)

func newCmdTeam(f *factory) *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:   "team",
		Short: "Share keys with a team or a fleet through etcd (end-to-end encrypted)",
		Long: `A team is a prefix of an etcd cluster. Its keys and tokens are encrypted with
age to every member's recipient; etcd holds ciphertext only. One token request
serves every machine of the team. Team keys are addressed as TEAM/LABEL.`,
	})
	cmd.AddCommand(
		newCmdTeamJoin(f, true, nil),
		newCmdTeamJoin(f, false, nil),
		newCmdTeamAdd(f, nil),
		newCmdTeamRemove(f, nil),
		newCmdTeamMembers(f, nil),
		newCmdTeamLeave(f, nil),
		newCmdTeamLs(f, nil),
	)
	return cmd
}

// teamJoinOptions creates a team (init) or joins one (join).
type teamJoinOptions struct {
	IO      *iostreams
	Getenv  func(string) string
	Secrets *secretSet
	Team    func() (team.Engine, error)

	Create   bool // init: a new team with this machine as its first member
	Conn     teamConnFlags
	Name     string // --name: this member's name (init)
	TeamName string // the team's name (the argument)
	// Fingerprints (join --fingerprint) are the roster's members'
	// fingerprints as the person expects them: the roster is pinned only
	// when it names exactly these. Yes (join --yes) pins it unchecked.
	// Neither: the person is asked on the terminal.
	Fingerprints []string
	Yes          bool
}

// newCmdTeamJoin builds "team init" (create) or "team join": one command
// body, two ways in.
func newCmdTeamJoin(f *factory, create bool, runF func(context.Context, *teamJoinOptions) error) *cobra.Command {
	opts := &teamJoinOptions{IO: f.IO, Getenv: f.Getenv, Secrets: f.Secrets, Team: f.Team, Create: create}
	cmd := &cobra.Command{
		Use:   "join TEAM --etcd URL[,URL…]",
		Short: "Record a team's etcd here and print this machine's recipient (age1…) for a member to add",
		Long: `Record a team's etcd here, read the team's roster (its members, each signed
into it by a member before) and print this machine's member card (age1…) on
stdout for a member to add with shipkey team add.

Before the roster is pinned (the members this machine trusts from then on),
join shows each member's fingerprint and asks whether they are the ones
shipkey team members TEAM shows on the machine of the member who invited you,
compared over another channel than etcd (in person, a call). If they differ,
answer no: someone who can write to etcd may have put another roster there;
nothing is pinned or kept. Without a terminal, pass the fingerprints you
expect with --fingerprint (each member's; the roster must name exactly these),
or --yes to pin the roster unchecked.`,
		Example: `  shipkey team join ops --etcd https://etcd1:2379
  shipkey team join ops --etcd https://etcd1:2379 --fingerprint SHA256:AbC…,SHA256:dEf…`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.TeamName = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamJoinRun(cmd.Context(), opts)
		},
	}
	if create {
		cmd.Use = "init TEAM --etcd URL[,URL…]"
		cmd.Short = "Create a team in etcd with this machine as its first member"
	}
	opts.Conn.add(cmd)
	if create {
		cmd.Flags().StringVar(&opts.Name, "name", "", "this member's name in the team")
	} else {
		cmd.Flags().StringSliceVar(&opts.Fingerprints, "fingerprint", nil, "pin the roster only when its members' fingerprints are exactly these (SHA256:…, repeat or comma-separate)")
		cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "pin the roster without asking or comparing its fingerprints (trust on first use)")
	}
	return cmd
}

// confirmRoster is what join asks before it pins a roster: it shows the
// members' fingerprints, then checks them against --fingerprint, takes
// --yes, or asks on the terminal. A refusal says what a mismatch means
// and what to do.
func confirmRoster(opts *teamJoinOptions, teamName string) func([]team.Member) error {
	return func(ms []team.Member) error {
		w := opts.IO.ErrText()
		w.Linef("Team %s's roster names %s:", teamName, plural(len(ms), "1 member", fmt.Sprintf("%d members", len(ms))))
		got := make([]string, len(ms))
		for i, m := range ms {
			got[i] = m.Fingerprint()
			w.Linef("  %s  %s", got[i], m.Name)
		}
		compare := text.Cleanf("`shipkey team members %s` on the machine of the member who invited you, in person or on a call (not through etcd)", teamName)
		refused := func(why string) error {
			return fmt.Errorf("team %s: not joined, nothing pinned (%s). Fingerprints other than the ones the team's members see mean the roster in etcd is not the team's (someone who can write to etcd may have put another there): do not join; ask the member who invited you to compare them with you over another channel than etcd, and join again once they match", teamName, why)
		}
		switch {
		case len(opts.Fingerprints) > 0:
			var want []string
			for _, f := range opts.Fingerprints {
				if f = strings.TrimSpace(f); f != "" {
					want = append(want, f)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(slices.Compact(want), got) {
				return refused("its fingerprints are not the ones given with --fingerprint")
			}
			w.Line(text.Trusted("They are the ones given with --fingerprint."))
			return nil
		case opts.Yes:
			w.Linef("Pinning them unchecked (--yes): compare them with %s.", compare)
			return nil
		}
		w.Print(text.Cleanf("Compare them with %s.\nDo they match? Pin this roster and join? [y/N] ", compare))
		answer, err := opts.IO.ReadLine()
		if err != nil {
			answer = ""
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return nil
		}
		return refused("you did not confirm its fingerprints")
	}
}

// checkFingerprints refuses --fingerprint values that are no fingerprint
// (a typo, a missing SHA256:, a value left empty) before anything is
// asked of etcd: they are the person's mistake, not a sign that the roster
// in etcd is not the team's, which is what a mismatch says.
func checkFingerprints(fps []string, teamName string) error {
	given := 0
	for i, f := range fps {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		given++
		b64, ok := strings.CutPrefix(f, "SHA256:")
		if sum, err := base64.RawStdEncoding.DecodeString(b64); !ok || err != nil || len(sum) != sha256.Size {
			return usageErrorf("--fingerprint value %d is not a member's fingerprint: give SHA256: and 43 characters each, as shipkey team members %s shows them", i+1, teamName)
		}
	}
	if len(fps) > 0 && given == 0 {
		return usageErrorf("--fingerprint is empty: give each member's SHA256:…, as shipkey team members %s shows them", teamName)
	}
	return nil
}

func teamJoinRun(ctx context.Context, opts *teamJoinOptions) error {
	tc, err := opts.Conn.conn(opts.TeamName)
	if err != nil {
		return err
	}
	if err := opts.check(tc.Name); err != nil {
		return err
	}
	eng, err := opts.Team() // first: it may hand the command on
	if err != nil {
		return err
	}
	password, err := opts.etcdPassword(tc.User)
	if err != nil {
		return err
	}
	if tc.Insecure {
		opts.IO.ErrText().Linef("shipkey: warning: team %s: --etcd-insecure: plain http to %s; the etcd password and every request cross the network in the clear (the team's items stay encrypted and signed)", tc.Name, strings.Join(team.PlainRemote(tc.Endpoints), ","))
	}
	jo := team.JoinOptions{Conn: tc, EtcdPassword: password, Name: opts.Name, Confirm: confirmRoster(opts, tc.Name)}
	if opts.Create {
		me, err := eng.Init(ctx, jo)
		if err != nil {
			return err
		}
		opts.IO.ErrText().Linef("Created team %s with this machine as member %s", tc.Name, me.Name)
		fmt.Fprintln(opts.IO.Out, me.Recipient)
		return nil
	}
	card, err := eng.Join(ctx, jo)
	if err != nil {
		return err
	}
	opts.IO.ErrText().Linef("Joined team %s and pinned its roster. Now ask a member to run:", tc.Name)
	opts.IO.ErrText().Linef("  shipkey team add %s %s", tc.Name, card)
	fmt.Fprintln(opts.IO.Out, card)
	return nil
}

// check refuses a bad team name and, for a join, pinning flags that
// contradict each other or a roster nobody can be asked about.
func (opts *teamJoinOptions) check(name string) error {
	if !store.ValidTeamName(name) {
		return usageErrorf("team name %s: use letters, digits, - and _ (at most 40)", text.ShellQuote(name))
	}
	if opts.Create {
		return nil
	}
	if opts.Yes && len(opts.Fingerprints) > 0 {
		return usageErrorf("give either --fingerprint or --yes, not both")
	}
	if err := checkFingerprints(opts.Fingerprints, name); err != nil {
		return err
	}
	if !opts.IO.StdinTTY && !opts.Yes && len(opts.Fingerprints) == 0 {
		return usageErrorf("team join %s: no terminal to ask whether its roster is the team's: pass --fingerprint SHA256:… (each member's, as shipkey team members %s shows them on a member's machine), or --yes to pin it unchecked", name, name)
	}
	return nil
}

// etcdPassword reads the etcd password of user, when there is one.
func (opts *teamJoinOptions) etcdPassword(user string) (string, error) {
	if user == "" {
		return "", nil
	}
	password, err := readSecret(opts.IO, opts.Getenv, secretSource{What: "etcd password", Env: envEtcdPassword, Prompt: text.Cleanf("etcd password for %s: ", user), Hint: "set " + envEtcdPassword})
	if err != nil {
		return "", err
	}
	opts.Secrets.Add(password)
	return password, nil
}

// teamMemberOptions adds a member to a team or removes one.
type teamMemberOptions struct {
	IO    *iostreams
	Team  func() (team.Engine, error)
	Store func() (*store.Store, error) // remove: the team's etcd user here, for the revoke advice

	TeamName string // the team
	Who      string // add: the member line (recipient); remove: a recipient or a name
	Name     string // add --name
}

func newCmdTeamAdd(f *factory, runF func(context.Context, *teamMemberOptions) error) *cobra.Command {
	opts := &teamMemberOptions{IO: f.IO, Team: f.Team}
	cmd := &cobra.Command{
		Use:   "add TEAM MEMBER-LINE [--name N]",
		Short: "Add a member: every key and token is re-encrypted to include it",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.TeamName, opts.Who = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamAddRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "the member's name (for team members and team remove; default: its host name)")
	return cmd
}

func teamAddRun(ctx context.Context, opts *teamMemberOptions) error {
	eng, err := opts.Team()
	if err != nil {
		return err
	}
	m, err := eng.AddMember(ctx, opts.TeamName, opts.Who, opts.Name)
	if err != nil {
		return err
	}
	opts.IO.ErrText().Linef("Added %s (%s) to team %s; every key and token is now encrypted to it too", m.Name, m.Recipient, opts.TeamName)
	opts.IO.ErrText().Linef("Its fingerprint is %s: `shipkey team members %s` on that machine must show the same one for itself (marked *); if it does not, the member line was changed on its way to you: remove it (shipkey team remove %s %s)",
		m.Fingerprint(), opts.TeamName, opts.TeamName, text.ShellQuote(m.Name))
	return nil
}

func newCmdTeamRemove(f *factory, runF func(context.Context, *teamMemberOptions) error) *cobra.Command {
	opts := &teamMemberOptions{IO: f.IO, Team: f.Team, Store: f.Store}
	return &cobra.Command{
		Use:   "remove TEAM RECIPIENT|NAME",
		Short: "Remove a member: every key and token is re-encrypted without it",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.TeamName, opts.Who = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamRemoveRun(cmd.Context(), opts)
		},
	}
}

func teamRemoveRun(ctx context.Context, opts *teamMemberOptions) error {
	eng, err := opts.Team()
	if err != nil {
		return err
	}
	m, err := eng.RemoveMember(ctx, opts.TeamName, opts.Who)
	if err != nil {
		return err
	}
	t := opts.TeamName
	opts.IO.ErrText().Linef("Removed %s from team %s. It can no longer read or sign anything written from now on, but it saw every secret and token of the team until now: rotate the client secrets (and passwords) of the team's keys at the realm, then: shipkey keys set-secret %s/LABEL", m.Name, t, t)
	var here store.TeamConn
	if opts.Store != nil {
		if st, err := opts.Store(); err == nil {
			here, _ = st.Team(t)
		}
	}
	opts.IO.ErrText().Linef("%s", team.RevokeAdvice(m, here.User))
	return nil
}

// teamOptions names one team (members, leave) or none (ls).
type teamOptions struct {
	IO    *iostreams
	Store func() (*store.Store, error)
	Team  func() (team.Engine, error)

	TeamName string
}

func newCmdTeamMembers(f *factory, runF func(context.Context, *teamOptions) error) *cobra.Command {
	opts := &teamOptions{IO: f.IO, Store: f.Store, Team: f.Team}
	return &cobra.Command{
		Use:   "members TEAM",
		Short: "List a team's members",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.TeamName = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamMembersRun(cmd.Context(), opts)
		},
	}
}

func teamMembersRun(ctx context.Context, opts *teamOptions) error {
	eng, err := opts.Team()
	if err != nil {
		return err
	}
	ms, err := eng.Members(ctx, opts.TeamName)
	if err != nil {
		return err
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	here, _ := st.Team(opts.TeamName)
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	rows := text.NewWriter(tw)
	rows.Linef("\tNAME\tFINGERPRINT\tRECIPIENT\tADDED")
	for _, m := range ms {
		mark := ""
		if m.Recipient == here.Recipient {
			mark = "*"
		}
		rows.Linef("%s\t%s\t%s\t%s\t%s", mark, m.Name, m.Fingerprint(), m.Recipient, text.Stamp(m.AddedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	opts.IO.ErrText().Line(text.Trusted("* this machine"))
	return nil
}

func newCmdTeamLs(f *factory, runF func(context.Context, *teamOptions) error) *cobra.Command {
	opts := &teamOptions{IO: f.IO, Store: f.Store}
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the teams this machine belongs to",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamLsRun(opts)
		},
	}
}

func teamLsRun(opts *teamOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	teams, err := st.Teams()
	if err != nil {
		return err
	}
	if len(teams) == 0 {
		opts.IO.ErrText().Line(text.Trusted("No teams yet: shipkey team init TEAM --etcd URL (or team join)"))
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	rows := text.NewWriter(tw)
	rows.Linef("TEAM\tETCD\tRECIPIENT")
	for _, t := range teams {
		rows.Linef("%s\t%s\t%s", t.Name, strings.Join(t.Endpoints, ","), t.Recipient)
	}
	return tw.Flush()
}

func newCmdTeamLeave(f *factory, runF func(context.Context, *teamOptions) error) *cobra.Command {
	opts := &teamOptions{IO: f.IO, Team: f.Team}
	return &cobra.Command{
		Use:   "leave TEAM",
		Short: "Forget a team on this machine (its connection, member identity and cache)",
		Long: `Forget a team on this machine: its connection, this machine's member identity,
the local cache and the pinned roster. The roster still names this machine
until another member runs shipkey team remove TEAM NAME (a member does not
remove itself: it signs every re-encrypted item).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.TeamName = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return teamLeaveRun(cmd.Context(), opts)
		},
	}
}

func teamLeaveRun(ctx context.Context, opts *teamOptions) error {
	eng, err := opts.Team()
	if err != nil {
		return err
	}
	if err := eng.Leave(ctx, opts.TeamName); err != nil {
		return err
	}
	t := opts.TeamName
	opts.IO.ErrText().Linef("Left team %s on this machine. Ask a member to run: shipkey team remove %s NAME (shipkey team members %s shows the names)", t, t, t)
	return nil
}
