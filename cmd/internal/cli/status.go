package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/keys"
	"github.com/shipkey/shipkey/store/team"
)

// statusOptions reports whether keys are usable, from metadata alone.
type statusOptions struct {
	IO    *iostreams
	Now   func() time.Time
	Store func() (*store.Store, error)
	// Team is the team engine: the team keys come from this machine's
	// caches (no etcd). Nil: none linked.
	Team func() (team.Engine, error)

	Label string // "" for every key
	JSON  bool
	Quiet bool
}

func newCmdStatus(f *factory, runF func(context.Context, *statusOptions) error) *cobra.Command {
	opts := &statusOptions{IO: f.IO, Now: f.Now, Store: f.readingStore}
	opts.Team = f.engine()
	cmd := &cobra.Command{
		Use:   "status [LABEL]",
		Short: "Say whether each key can hand out a token, or needs a login",
		Long: `Print one line per key (or for the key named): where its secrets are kept
(keyring, age file, plaintext, team), then "valid until" the access
token's expiry, "refresh by" the refresh token's expiry when only the access
token has expired, or why a login is needed ("login needed", "logged out",
"session ended" when the server refused the refresh token), or that ending
its session at the server is pending (a logout or keys rm the server refused
or never got: run shipkey logout LABEL to retry).

For a key of this machine it reads only what shipkey keeps about it: no
secret is read and no request is made. A team key's state is the team's as
etcd holds it (one read of each team; when etcd does not answer, as cached
here, with a warning): "removed from team T" once this machine is no member.

Exit codes: 0 when every key shown is usable (valid or refreshable), 3 when
one needs a login (run: shipkey login LABEL), 1 when one is a key of a team
this machine was removed from (no login helps).`,
		Example: `  shipkey status
  shipkey status prod -q || shipkey login prod
  shipkey status --json | jq -r '.[] | select(.usable | not) | .label'`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: completeLabels(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Label = labelArg(args)
			if opts.JSON && opts.Quiet {
				return usageErrorf("give either --json or --quiet, not both (see: %s --help)", cmd.CommandPath())
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing; only the exit code says")
	return cmd
}

// What status says of a key, in --json's "state".
const (
	stateValid        = "valid"
	stateRefreshable  = "refreshable"
	stateRenewsItself = "renews_itself" // a grant that runs without a person (client credentials)
	stateLoginNeeded  = "login_needed"
	stateLoggedOut    = "logged_out"
	stateSessionEnded = "session_ended"
	stateEndPending   = "end_pending"
	stateRemoved      = "removed" // a team key of a team this machine was removed from
)

// keyVerdict is where one key stands for status.
type keyVerdict struct {
	State  string // one of the state words above
	Word   string // the state in a few words, for completion descriptions
	Detail string // the status line after the label
	Usable bool   // shipkey token would hand out a token without a person
}

// keyStatus reads a key's state at now by the lifecycle policy (auth.Expiry
// through Token.Access and Token.Refresh), from metadata alone.
//
// The store marks a key logged out both when the user logs out (its token
// metadata is dropped) and when renewal found that only a login can help (the
// metadata stays): then a refresh token that is still within its stated life
// was refused by the server, "session ended"; an expired one is just expired.
// A key that remembers its password logs in again by itself unless that
// password was refused.
func keyStatus(k store.Key, now time.Time) keyVerdict {
	access := k.Token.Access()
	switch {
	case k.TeamRemoved:
		return removedStatus(k)
	case !k.EndPending.IsZero():
		return keyVerdict{stateEndPending, "end pending", when("logged out; ending the session at the server is pending since ",
			k.EndPending, now, "; run: shipkey logout "+text.ShellQuote(k.Label)), false}
	case k.LoggedOut:
		return loggedOutStatus(k, now)
	case k.Token.ObtainedAt.IsZero():
		return keyVerdict{stateLoginNeeded, "login needed", "login needed: no token yet" + loginHint(k), false}
	case !access.Expired(now):
		return validStatus(access, now)
	case !k.HasRefreshToken:
		return noRefreshStatus(k, access, now)
	}
	return refreshStatus(k, now)
}

// removedStatus is a team key whose team no longer has this machine.
func removedStatus(k store.Key) keyVerdict {
	team := k.Words().Team
	return keyVerdict{stateRemoved, "removed from " + team.String(), text.Cleanf("removed from team %s: this machine is no member now "+
		"(to be added again: shipkey team join %s --etcd …, then a member's team add; else: shipkey team leave %s)", team, text.ShellQuote(k.Team), text.ShellQuote(k.Team)).String(), false}
}

// loginHint is the command that logs k in again, as status words end.
func loginHint(k store.Key) string { return "; run: shipkey login " + text.ShellQuote(k.Label) }

// loggedOutStatus is where a key marked logged out stands: logged out by
// the user (its token metadata dropped), or found by renewal to need a
// login: the session ended when the refresh token was refused within its
// life, else it expired.
func loggedOutStatus(k store.Key, now time.Time) keyVerdict {
	refresh := k.Token.Refresh()
	switch {
	case k.Token.ObtainedAt.IsZero() && k.RenewsItself():
		return keyVerdict{stateLoggedOut, "logged out", "logged out; the " + k.Grant.String() + " grant gets a new token at the next use", true}
	case k.Token.ObtainedAt.IsZero() && k.RememberPassword:
		return keyVerdict{stateLoggedOut, "logged out", "logged out; logs in again with the remembered password", true}
	case k.Token.ObtainedAt.IsZero():
		return keyVerdict{stateLoggedOut, "logged out", "logged out" + loginHint(k), false}
	case refresh.Stated() && !refresh.Expired(now):
		return keyVerdict{stateSessionEnded, "session ended", "session ended (the server refused the refresh token)" + loginHint(k), false}
	case refresh.Expired(now):
		return keyVerdict{stateLoginNeeded, "login needed", when("login needed: the refresh token expired ", refresh.At, now, loginHint(k)), false}
	}
	return keyVerdict{stateLoginNeeded, "login needed", "login needed" + loginHint(k), false}
}

// validStatus is a key whose access token has not expired.
func validStatus(access auth.Expiry, now time.Time) keyVerdict {
	if !access.Stated() {
		return keyVerdict{stateValid, "valid", "valid (expiry: " + auth.ExpiryNotStated + ")", true}
	}
	return keyVerdict{stateValid, "valid", when("valid until ", access.At, now, ""), true}
}

// noRefreshStatus is a key whose access token expired and that has no
// refresh token: its grant renews it, it logs in with the remembered
// password, or it needs a login.
func noRefreshStatus(k store.Key, access auth.Expiry, now time.Time) keyVerdict {
	switch {
	case k.RenewsItself():
		return keyVerdict{stateRenewsItself, "renews itself", when("the access token expired ", access.At, now,
			"; renews itself with the "+k.Grant.String()+" grant"), true}
	case !k.RememberPassword:
		return keyVerdict{stateLoginNeeded, "login needed", when("login needed: the access token expired ", access.At, now, " and there is no refresh token"+loginHint(k)), false}
	}
	return keyVerdict{stateRefreshable, "login with remembered password",
		when("the access token expired ", access.At, now, "; logs in again with the remembered password"), true}
}

// refreshStatus is a key whose access token expired and that has a
// refresh token: refreshable while it lives, else a login (by the
// remembered password, or the person's).
func refreshStatus(k store.Key, now time.Time) keyVerdict {
	refresh := k.Token.Refresh()
	switch {
	case !refresh.Expired(now) && !refresh.Stated():
		return keyVerdict{stateRefreshable, "refreshable", "access token expired; refreshable (refresh token expiry: " + k.Token.RefreshExpiryNote() + ")", true}
	case !refresh.Expired(now):
		return keyVerdict{stateRefreshable, "refreshable", when("refresh by ", refresh.At, now, " (the access token expired)"), true}
	case k.RememberPassword:
		return keyVerdict{stateRefreshable, "login with remembered password",
			when("the refresh token expired ", refresh.At, now, "; logs in again with the remembered password"), true}
	}
	return keyVerdict{stateLoginNeeded, "login needed", when("login needed: the refresh token expired ", refresh.At, now, loginHint(k)), false}
}

// when writes t absolute and relative between before and after:
// "valid until 2026-12-06 14:03:05 UTC (in 14d 23h)", in one allocation
// (status writes one a key).
func when(before string, t, now time.Time, after string) string {
	var buf [160]byte
	b := append(buf[:0], before...)
	b = text.AppendStamp(b, t)
	b = append(b, " ("...)
	b = text.AppendRelative(b, t, now)
	b = append(b, ')')
	return string(append(b, after...))
}

// statusJSON is one key in `status --json`.
type statusJSON struct {
	Label            string  `json:"label"`
	Default          bool    `json:"default"`
	State            string  `json:"state"`
	Usable           bool    `json:"usable"`
	Detail           string  `json:"detail"`
	Secrets          string  `json:"secrets"` // keyring, file, plaintext, team; "" when none were written
	AccessExpiresAt  *string `json:"access_expires_at"`
	RefreshExpiresAt *string `json:"refresh_expires_at"`
}

func statusRun(ctx context.Context, opts *statusOptions) error {
	st, err := opts.Store()
	if err != nil {
		return err
	}
	tally := &statusTally{now: opts.Now()}
	bw := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	// One key, or every key one at a time from the index (then the team
	// keys, as etcd holds them: whether this machine is still a member):
	// JSON is written as it comes, a table is written by writeTable.
	svc := newKeys(st, opts.Team, opts.IO, nil, opts.Now, nil)
	err = svc.Walk(ctx, opts.Label, keys.Checked, func(each keys.Each) error {
		switch {
		case opts.Quiet:
			return each(func(k store.Key) error { tally.verdict(k); return nil })
		case opts.JSON:
			return writeStatusJSON(bw, each, tally)
		default:
			return writeStatusTable(bw, each, tally)
		}
	})
	if err != nil {
		return err
	}
	if tally.n == 0 {
		if opts.Quiet {
			return &exitError{code: exitFailure}
		}
		return &exitError{code: exitFailure, err: errNoKeysYet}
	}
	if !opts.Quiet && !opts.JSON {
		if err := bw.Flush(); err != nil {
			return err
		}
		opts.IO.OutText().Linef("%s", auditStatus(st))
	}
	return tally.outcome(opts.Quiet)
}

// statusTally counts the keys status judged and keeps those that need a
// login and the teams that removed this machine.
type statusTally struct {
	now                    time.Time
	n                      int
	needLogin, removedFrom []string
}

// verdict judges k and counts it.
func (t *statusTally) verdict(k store.Key) keyVerdict {
	t.n++
	v := keyStatus(k, t.now)
	switch {
	case v.State == stateRemoved:
		if !slices.Contains(t.removedFrom, k.Team) {
			t.removedFrom = append(t.removedFrom, k.Team)
		}
	case !v.Usable:
		t.needLogin = append(t.needLogin, k.Label)
	}
	return v
}

// writeStatusJSON writes each key's verdict as one element of a JSON
// array, as it comes.
func writeStatusJSON(bw *bufio.Writer, each keys.Each, t *statusTally) error {
	arr := &jsonArray{w: bw}
	err := each(func(k store.Key) error {
		v := t.verdict(k)
		j := statusJSON{Label: k.Label, Default: k.Default, State: v.State, Usable: v.Usable, Detail: v.Detail, Secrets: keys.SecretsBackend(k)}
		if !k.Token.ObtainedAt.IsZero() {
			j.AccessExpiresAt = rfc3339OrNil(k.Token.AccessExpiry())
			j.RefreshExpiresAt = rfc3339OrNil(k.Token.RefreshExpiresAt)
		}
		return arr.add(j)
	})
	if err != nil {
		return err
	}
	return arr.close()
}

// writeStatusTable writes each key's verdict as a row of the status
// table; only writeTable's first pass counts.
func writeStatusTable(bw *bufio.Writer, each keys.Each, t *statusTally) error {
	var cells []string // reused: writeTable keeps a row's bytes, not its cells
	_, err := writeTable(bw, nil, each, func(k store.Key, pass int) []string {
		if pass == 0 {
			cells = statusCells(cells[:0], k, t.verdict(k))
		} else {
			cells = statusCells(cells[:0], k, keyStatus(k, t.now))
		}
		return cells
	}, tableKeep, spillFile)
	return err
}

// outcome is status's exit: nil when every key is usable, else the
// login-needed code (a failure when a team removed this machine, as no
// login helps) with a line saying what to run, which quiet leaves out.
func (t *statusTally) outcome(quiet bool) error {
	if len(t.needLogin) == 0 && len(t.removedFrom) == 0 {
		return nil
	}
	code := exitLoginNeeded
	if len(t.removedFrom) > 0 {
		code = exitFailure // no login helps
	}
	if quiet {
		return &exitError{code: code}
	}
	return &exitError{code: code, err: errors.New(strings.Join(t.says(), "; "))}
}

// says is what outcome tells: the removed teams, then the keys to log in.
func (t *statusTally) says() []string {
	var says []string
	if len(t.removedFrom) > 0 {
		says = append(says, fmt.Sprintf("this machine was removed from %s %s, whose keys it can no longer use; to use them again, run shipkey team join %s --etcd … and ask a member to add the line it prints, else forget the team here: shipkey team leave %s",
			plural(len(t.removedFrom), "team", "teams"), strings.Join(t.removedFrom, ", "), t.removedFrom[0], t.removedFrom[0]))
	}
	if len(t.needLogin) > 0 {
		quoted := make([]string, len(t.needLogin))
		for i, l := range t.needLogin {
			quoted[i] = text.ShellQuote(l)
		}
		says = append(says, fmt.Sprintf("login needed for %s; run: shipkey login %s",
			plural(len(t.needLogin), "API key ", "API keys ")+strings.Join(quoted, ", "), quoted[0]))
	}
	return says
}

// statusCells appends to cells one row of the status table: the default
// mark and the label, where its secrets are, then the verdict.
func statusCells(cells []string, k store.Key, v keyVerdict) []string {
	mark := "  "
	if k.Default {
		mark = "* "
	}
	return append(cells, mark+k.Shown().String(), secretsWhere(k), v.Detail)
}

// secretsWhere names where a key's secrets are kept, from its metadata:
// the OS keyring, the age-encrypted file, the plaintext file, the team's
// etcd; "-" when none were written.
func secretsWhere(k store.Key) string {
	switch b := keys.SecretsBackend(k); b {
	case store.BackendFile:
		return "age file"
	case "":
		return "-"
	default:
		return text.Safe(b)
	}
}

var errNoKeysYet = errors.New("no API keys yet; get one: shipkey keys new")

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// eachOf walks keys as store.EachKey walks the index.
func eachOf(k []store.Key) keyWalk { return keys.EachOf(k) }
