package tui

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
)

// Terminal capabilities are detected once per process, and that is already
// done before main: lipgloss's package init makes lipgloss.Writer with the
// colour profile of stdout (from TERM, COLORTERM, NO_COLOR and terminfo;
// inside tmux upstream also runs `tmux info`, 5-11 ms, which our copy of
// lipgloss does not: third_party/lipgloss/PATCH.md). Left to themselves,
// Bubble Tea and its renderer each detect again, each asking tmux. Run hands
// the program lipgloss's profile (tea.WithColorProfile) and an environment
// without TMUX (termEnv), so the renderer's own detection, whose result the
// program overrides anyway, does not ask tmux; nothing else in Bubble Tea or
// its renderer reads TMUX. The background colour (dark or light) is asked
// with tea.RequestBackgroundColor: the first frame does not wait for the
// answer (dark until it comes).
//
// Inside tmux, $COLORTERM does not reach the programs (tmux does not pass
// it on), so the profile from TERM and terminfo is at most 256 colours even
// where tmux draws true colour. Once the first frame is out, the app asks
// tmux itself (Model.cfg.askTrueColor, tmuxHasTrueColor, what upstream lipgloss did before main) and,
// when tmux has Tc or RGB, upgrades the program to true colour.

// stdoutProfile is the colour profile lipgloss detected for stdout.
func stdoutProfile() colorprofile.Profile { return lipgloss.Writer.Profile }

// askTmuxForTrueColor reports whether the colour profile p may be upgraded
// by asking tmux: inside tmux (TMUX set in env) with colours on but fewer
// than true colour. NO_COLOR (Ascii) and a non-terminal stay as they are.
func askTmuxForTrueColor(env []string, p colorprofile.Profile) bool {
	if p != colorprofile.ANSI && p != colorprofile.ANSI256 {
		return false
	}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "TMUX="); ok && v != "" {
			return true
		}
	}
	return false
}

// tmuxInfoWait bounds `tmux info`: a tmux that does not answer leaves the
// profile as it is.
const tmuxInfoWait = 2 * time.Second

// tmuxHasTrueColor runs `tmux info` (5-11 ms) with env, as upstream
// lipgloss does before main, and reports whether tmux has the Tc or RGB
// capability. Any failure is "no".
func tmuxHasTrueColor(ctx context.Context, tmuxPath string, env []string) bool {
	ctx, cancel := context.WithTimeout(ctx, tmuxInfoWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, tmuxPath, "info")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return false
	}
	for line := range bytes.SplitSeq(out, []byte("\n")) {
		if (bytes.Contains(line, []byte("Tc")) || bytes.Contains(line, []byte("RGB"))) && bytes.Contains(line, []byte("true")) {
			return true
		}
	}
	return false
}

// upgradeInTmux is what Run does once the first frame is out: the message
// that turns a program's profile to true colour (Bubble Tea's own answer to
// a terminal reporting RGB), or nil.
func upgradeInTmux(ctx context.Context, env []string) tea.Msg {
	path, err := exec.LookPath("tmux")
	if err != nil || !tmuxHasTrueColor(ctx, path, env) {
		return nil
	}
	return tea.CapabilityMsg{Content: "RGB"}
}

// termEnv is env without TMUX, for the program once the profile is known.
func termEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "TMUX=") })
}
