package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
)

// auditOptions list the audit trail's entries.
type auditOptions struct {
	IO    *iostreams
	Store func() (*store.Store, error)
	Now   func() time.Time

	Key   string // --key: entries of this key only
	Since string // --since: a duration back from now, or a date/time
	JSON  bool   // --json: the entries as JSON lines
}

func newCmdAudit(f *factory, runF func(context.Context, *auditOptions) error) *cobra.Command {
	opts := &auditOptions{IO: f.IO, Store: f.readingStore, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "audit [--key LABEL] [--since WHEN] [--json]",
		Short: "List the audit trail: which token went to which process, when",
		Long: `List the audit trail: every hand-out of a token, a header, a DPoP proof or a
copy (shipkey token, header, api, curl, exec and exec --serve, serve and its
proof endpoint, kubectl's exec credential, and the app's copy, reveal and
Request screen), oldest first. Each entry says when, which key, the audience
of an exchanged token, what was handed out and its fingerprint (the first 16
hex digits of the token's SHA-256; never the token), the way it went, and
the process that received it (pid, uid, executable, command line, ssh
session), as the system described it.

The trail is kept in the state directory's audit folder as JSON lines, each
chained to the one before by a SHA-256 hash; shipkey audit verify checks
the chain. SHIPKEY_AUDIT=off turns the trail off (shipkey status says so).

--since takes a duration back from now (90m, 24h, 7d) or a date or time
(2026-11-28, 2026-11-28T14:00:00Z).`,
		Example: `  shipkey audit --key prod --since 24h
  shipkey audit --json | jq -r 'select(.via == "exec") | .to.exe'
  shipkey audit verify`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Key, "key", "", "only the entries of this key (LABEL or TEAM/LABEL)")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only the entries since then: a duration back (24h, 7d) or a date/time")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the entries as JSON lines, as the trail keeps them")
	cmd.AddCommand(newCmdAuditVerify(f))
	return cmd
}

// parseSince reads --since at now: a duration back (with d for days) or an
// RFC 3339 time or a date (UTC midnight).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			if n > int(math.MaxInt64/int64(24*time.Hour)) {
				return time.Time{}, nil // further back than a Duration goes: every entry
			}
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageErrorf("--since %s is neither a duration back (90m, 24h, 7d) nor a date or time (2026-11-28, 2026-11-28T14:00:00Z)", text.ShellQuote(s))
}

func auditRun(_ context.Context, opts *auditOptions) error {
	since, err := parseSince(opts.Since, opts.Now())
	if err != nil {
		return err
	}
	st, err := opts.Store()
	if err != nil {
		return err
	}
	l := audit.Open(auditDir(st), audit.Options{})
	out := opts.IO.Out
	if opts.JSON && opts.IO.StdoutTTY {
		// JSON escapes C0 controls, not C1 ones (CSI) nor bidi marks: on a
		// terminal they are made visible, as api does with an answer.
		safe := text.NewSafeWriter(out)
		defer safe.Flush()
		out = safe
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	n := 0
	err = l.Read(func(e audit.Entry) error {
		if (opts.Key != "" && e.Key != opts.Key) || e.Time.Before(since) {
			return nil
		}
		n++
		if opts.JSON {
			return enc.Encode(e)
		}
		if n == 1 {
			fmt.Fprintln(tw, "TIME\tKEY\tWHAT\tVIA\tFINGERPRINT\tRECEIVER")
		}
		key := e.Key
		if e.Audience != "" {
			key += " → " + e.Audience
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", text.Stamp(e.Time), text.Safe(key), text.Safe(string(e.What)),
			text.Safe(e.Via), text.Safe(e.Fingerprint), text.Safe(e.To.String()))
		return err
	})
	if err != nil {
		return fmt.Errorf("reading the audit trail in %s: %w", text.Path(l.Dir()), err)
	}
	if !opts.JSON {
		if err := tw.Flush(); err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintln(opts.IO.ErrOut, "No hand-out in the audit trail"+auditNoneWhy(opts))
		}
	}
	return nil
}

// auditNoneWhy completes "No hand-out in the audit trail" for the filters
// and a trail that is off.
func auditNoneWhy(opts *auditOptions) string {
	var why []string
	if opts.Key != "" {
		why = append(why, "of key "+text.Safe(opts.Key))
	}
	if opts.Since != "" {
		why = append(why, "since "+text.Safe(opts.Since))
	}
	s := ""
	if len(why) > 0 {
		s = " " + strings.Join(why, " ")
	}
	if auditOff() {
		s += " (it is off: " + EnvAudit + "=off)"
	}
	return s
}

func newCmdAuditVerify(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the audit trail's hash chain; exit 1 naming the first entry that does not fit",
		Long: `Check every entry of the audit trail against its hash and the entry before
it, oldest first, across rotated files. Exit 0 with the count and the last
entry's hash (write it down elsewhere: a later verify whose chain still
holds that hash shows nothing before it was changed); exit 1 naming the
first entry that does not fit (changed, removed, added or moved). A last
line cut short by a crash is tolerated and said; the next hand-out cuts it
away. See docs/audit.md for what the chain does not prove.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.readingStore()
			if err != nil {
				return err
			}
			return auditVerifyRun(f.IO, audit.Open(auditDir(st), audit.Options{}))
		},
	}
}

func auditVerifyRun(ios *iostreams, l *audit.Log) error {
	rep, err := l.Verify()
	if err != nil {
		return fmt.Errorf("reading the audit trail in %s: %w", text.Path(l.Dir()), err)
	}
	if rep.Problem != nil {
		return &exitError{code: 1, err: fmt.Errorf("the audit trail does not verify: %s (in %s; %d entries before it fit)",
			text.Safe(rep.Problem.Error()), text.Path(l.Dir()), rep.Entries)}
	}
	if len(rep.Files) == 0 {
		fmt.Fprintf(ios.Out, "The audit trail in %s is empty: nothing handed out yet\n", text.Path(l.Dir()))
		return nil
	}
	fmt.Fprintf(ios.Out, "The audit trail verifies: %d %s in %d %s (%s); last hash %s\n", rep.Entries, plural(rep.Entries, "entry", "entries"),
		len(rep.Files), plural(len(rep.Files), "file", "files"), text.Path(l.Dir()), rep.Last)
	if !rep.Anchored {
		fmt.Fprintln(ios.Out, "Its oldest file continues one that rotation removed: the chain starts there.")
	}
	if rep.Cut {
		fmt.Fprintln(ios.Out, "Its last line was cut short by a crash (an entry never finished; the next hand-out cuts it away).")
	}
	return nil
}
