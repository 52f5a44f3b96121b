package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

func TestTermEnvDropsOnlyTMUX(t *testing.T) {
	t.Parallel()
	env := []string{"TERM=tmux-256color", "TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%1", "COLORTERM=truecolor"}
	got := termEnv(env)
	want := []string{"TERM=tmux-256color", "TMUX_PANE=%1", "COLORTERM=truecolor"}
	if !slices.Equal(got, want) {
		t.Fatalf("termEnv = %q, want %q", got, want)
	}
	if env[1] != "TMUX=/tmp/tmux-0/default,1,0" {
		t.Fatal("termEnv changed its argument")
	}
}

// TestColourProfileAsksNoTmux starts this test binary as a child inside a
// pretend tmux (TMUX set, a `tmux` on PATH that notes each call, stdout
// forced to count as a terminal) and reads the colour profile lipgloss
// detected in its package init: from $COLORTERM and $TERM, never from
// `tmux info` (upstream runs it there, in every process).
func TestColourProfileAsksNoTmux(t *testing.T) {
	t.Parallel()
	if os.Getenv("SHIPKEY_TEST_PRINT_PROFILE") != "" {
		t.Skip("the child prints in TestMain")
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := "#!/bin/sh\necho \"$*\" >> " + calls + "\necho 'Tc: [present]' 'RGB: (flag) true'\n"
	if err := os.WriteFile(filepath.Join(dir, "tmux"), []byte(fake), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		colorterm string
		want      colorprofile.Profile
	}{{"truecolor", colorprofile.TrueColor}, {"", colorprofile.ANSI256}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = []string{"PATH=" + dir, "TERM=tmux-256color", "TMUX=/tmp/tmux-0/default,1,0", "TTY_FORCE=1",
			"COLORTERM=" + c.colorterm, "SHIPKEY_TEST_PRINT_PROFILE=1", "HOME=" + dir}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want.String() {
			t.Errorf("COLORTERM=%q inside tmux: profile %s, want %s", c.colorterm, got, c.want)
		}
	}
	if data, err := os.ReadFile(calls); err == nil {
		t.Fatalf("lipgloss ran tmux: %q", data)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("SHIPKEY_TEST_PRINT_PROFILE") != "" {
		fmt.Println(stdoutProfile())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAskTmuxForTrueColor(t *testing.T) {
	t.Parallel()
	in := []string{"TERM=tmux-256color", "TMUX=/tmp/tmux-0/default,1,0"}
	for _, c := range []struct {
		env  []string
		p    colorprofile.Profile
		want bool
	}{
		{in, colorprofile.ANSI256, true},
		{in, colorprofile.ANSI, true},
		{in, colorprofile.TrueColor, false}, // nothing to gain
		{in, colorprofile.Ascii, false},     // NO_COLOR
		{in, colorprofile.NoTTY, false},
		{[]string{"TERM=xterm-256color"}, colorprofile.ANSI256, false},
		{[]string{"TMUX="}, colorprofile.ANSI256, false},
	} {
		if got := askTmuxForTrueColor(c.env, c.p); got != c.want {
			t.Errorf("askTmuxForTrueColor(%q, %s) = %v, want %v", c.env, c.p, got, c.want)
		}
	}
}

// tmux info's answer decides; a tmux that fails says no.
func TestTmuxHasTrueColor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		script string
		want   bool
	}{
		"tc":     {"echo '  197: Tc: (flag) true'", true},
		"rgb":    {"echo '  180: RGB: (flag) true'", true},
		"absent": {"echo '  197: Tc: [missing]'", false},
		"fails":  {"echo 'no server running' >&2; exit 1", false},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+c.script+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if got := tmuxHasTrueColor(t.Context(), path, nil); got != c.want {
			t.Errorf("%s: tmuxHasTrueColor = %v, want %v", name, got, c.want)
		}
	}
}

// The model asks for true colour once, on the program's own colour
// profile message (so that message is not processed after the upgrade), and
// hands on what the ask returns.
func TestModelAsksTrueColourOnce(t *testing.T) {
	t.Parallel()
	var asked []colorprofile.Profile
	h := newHarnessWith(t, nil, func(c *config) {
		c.askTrueColor = func(p colorprofile.Profile) tea.Msg {
			asked = append(asked, p)
			return tea.CapabilityMsg{Content: "RGB"}
		}
	})
	cmd := h.m.dispatch(tea.ColorProfileMsg{Profile: colorprofile.ANSI256})
	if cmd == nil {
		t.Fatal("no ask on the program's colour profile")
	}
	if msg, ok := cmd().(tea.CapabilityMsg); !ok || msg.Content != "RGB" {
		t.Fatalf("the ask's message was not handed on: %v", msg)
	}
	if cmd := h.m.dispatch(tea.ColorProfileMsg{Profile: colorprofile.TrueColor}); cmd != nil {
		t.Fatal("asked again on the upgrade's own message")
	}
	if len(asked) != 1 || asked[0] != colorprofile.ANSI256 {
		t.Fatalf("asked %v", asked)
	}
}
