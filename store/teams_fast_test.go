package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Teams does not parse a config.toml that names no team (the app asks
// before its first frame; 100k keys are a second of TOML): damage there is
// the next reader's to tell. One that mentions teams is parsed, and its
// damage said.
func TestTeamsParsesOnlyWhatMentionsTeams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	s := e.open(Options{})
	if err := os.MkdirAll(e.cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(toml string) {
		if err := os.WriteFile(filepath.Join(e.cfgDir, "config.toml"), []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("default = 'a'\n[[keys]\nlabel = 'damaged, and no team'\n")
	if teams, err := s.Teams(); err != nil || len(teams) != 0 {
		t.Fatalf("no team named: Teams = %v, %v; want none, no parse", teams, err)
	}
	write("[[teams]]\nname = 'ops'\netcd = ['http://127.0.0.1:2379']\n[[teams]]\nname = 'dev'\netcd = ['http://127.0.0.1:2379']\n")
	teams, err := s.Teams()
	if err != nil || len(teams) != 2 || teams[0].Name != "dev" || teams[1].Name != "ops" {
		t.Fatalf("Teams = %v, %v; want dev, ops", teams, err)
	}
	write("[[teams]\nname = 'ops'\n")
	if _, err := s.Teams(); err == nil || !strings.Contains(err.Error(), "fix or move it away") {
		t.Fatalf("damaged teams: err %v, want the file named as damaged", err)
	}
}

// fileMentions finds the word across the pieces it reads, and only there.
func TestFileMentionsAcrossPieces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, at := range []int{0, 256<<10 - 3, 256<<10 - 5, 256 << 10, 600 << 10} {
		data := []byte(strings.Repeat("x", 700<<10))
		copy(data[at:], "teams")
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if ok, err := fileMentions(p, teamsWord); !ok || err != nil {
			t.Errorf("teams at %d: %v %v", at, ok, err)
		}
		data[at] = 'x'
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if ok, err := fileMentions(p, teamsWord); ok || err != nil {
			t.Errorf("no teams (was at %d): %v %v", at, ok, err)
		}
	}
}
