package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/team"
	"github.com/shipkey/shipkey/store/team/etcdteam"
	"github.com/shipkey/shipkey/store/team/etcdtest"
)

// team join shows the roster's fingerprints and asks on a terminal before
// it pins the roster: "n" (or no answer) pins nothing, keeps nothing of the
// team and says what a mismatch means; "y" pins it and prints the card.
// --fingerprint pins only the roster of exactly those members. Before, join
// pinned first and asked the person to compare after.
func TestTeamJoinAsksBeforePinning(t *testing.T) {
	t.Parallel()
	c := etcdtest.Need(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), patience(time.Minute))
	defer cancel()
	ma, _ := etcdtest.TeamOfTwo(t, ctx, c, "ask")
	ms, err := ma.Engine.Members(ctx, "ask")
	if err != nil || len(ms) != 2 {
		t.Fatalf("members: %v, %v", ms, err)
	}
	// join answers on a terminal, or with fingerprints (then with none).
	join := func(answer string, fingerprints ...string) (*store.Store, string, string, error) {
		st, _ := testStore(t, time.Now)
		eng := etcdteam.New(team.Options{Store: st, Warn: &strings.Builder{}})
		ios, out, errOut := testIO(answer)
		ios.StdinTTY = fingerprints == nil
		err := teamJoinRun(ctx, &teamJoinOptions{IO: ios, Getenv: func(string) string { return "" }, TeamName: "ask", Fingerprints: fingerprints,
			Conn: teamConnFlags{Endpoints: strings.Join(c.Endpoints(), ",")}, Team: func() (team.Engine, error) { return eng, nil }})
		return st, out.String(), errOut.String(), err
	}
	pinned := func(st *store.Store) bool {
		_, err := os.Stat(filepath.Join(team.StateDir(st.StateDir(), "ask"), team.PinFileName))
		return err == nil
	}

	for _, answer := range []string{"n\n", ""} {
		st, out, said, err := join(answer)
		for _, m := range ms {
			if !strings.Contains(said, m.Fingerprint()+"  "+m.Name) {
				t.Errorf("answer %q: join did not show %s's fingerprint before asking:\n%s", answer, m.Name, said)
			}
		}
		if err == nil || exitCode(err) != exitFailure || !strings.Contains(err.Error(), "do not join") || !strings.Contains(err.Error(), "who invited you") || out != "" {
			t.Errorf("answer %q: %v (exit %d), stdout %q; want exit 1 saying what a mismatch means and no card", answer, err, exitCode(err), out)
		}
		if teams, _ := st.Teams(); len(teams) != 0 || pinned(st) {
			t.Errorf("answer %q: the team was kept (%v) or its roster pinned (%v)", answer, teams, pinned(st))
		}
	}
	// --fingerprint pins only a roster of exactly these members: one of
	// the two is not enough.
	st, _, _, err := join("", ms[0].Fingerprint())
	if err == nil || !strings.Contains(err.Error(), "not the ones given with --fingerprint") || pinned(st) {
		t.Errorf("--fingerprint of one member of two: %v, pinned %v; want refused", err, pinned(st))
	}
	if _, out, _, err := join("", ms[1].Fingerprint()+" ", ms[0].Fingerprint()); err != nil || !strings.HasPrefix(out, "age1") {
		t.Errorf("--fingerprint of both members: %v, %q", err, out)
	}
	st, out, said, err := join("y\n")
	if err != nil || !strings.HasPrefix(out, "age1") || !pinned(st) || !strings.Contains(said, "[y/N]") {
		t.Fatalf("answer y: %v, stdout %q, pinned %v:\n%s", err, out, pinned(st), said)
	}
	if _, err := st.Team("ask"); errors.Is(err, store.ErrNotFound) {
		t.Error("answer y: the team is not recorded")
	}
}

// A --fingerprint value that is no fingerprint (a typo, no SHA256:, an
// empty value) is the person's mistake: join refuses it as a usage error
// (exit 2) before it asks etcd anything, and does not say that the roster
// in etcd may not be the team's, as a mismatch does. Nothing of the value
// is echoed (it may hold anything).
func TestTeamJoinRefusesMalformedFingerprints(t *testing.T) {
	t.Parallel()
	good := "SHA256:" + strings.Repeat("A", 43)
	for _, fps := range [][]string{
		{"foo"},
		{strings.TrimPrefix(good, "SHA256:")},
		{good + "="},
		{good, "SHA256:\x1b]0;x\x07"},
		{"", " "},
	} {
		ios, out, _ := testIO("")
		err := teamJoinRun(context.Background(), &teamJoinOptions{IO: ios, Getenv: func(string) string { return "" }, TeamName: "ask", Fingerprints: fps,
			Conn: teamConnFlags{Endpoints: "http://127.0.0.1:1"}, Team: func() (team.Engine, error) {
				t.Errorf("%q: etcd was asked", fps)
				return nil, errors.New("no etcd")
			}})
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--fingerprint") || strings.Contains(err.Error(), "etcd") ||
			strings.Contains(err.Error(), "\x1b") || out.Len() != 0 {
			t.Errorf("%q: %v (exit %d); want a usage error naming --fingerprint", fps, err, exitCode(err))
		}
	}
}
