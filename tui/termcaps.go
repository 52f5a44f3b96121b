package tui

import (
	"slices"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
)

// Terminal capabilities are detected once per process, and that is already
// done before main: lipgloss's package init makes lipgloss.Writer with the
// colour profile of stdout (from TERM, COLORTERM, NO_COLOR and terminfo;
// inside tmux, when stdout is a terminal and colours are on, it also runs
// `tmux info`, 5-11 ms, so where tmux has Tc or RGB the app draws in true
// colour from its first frame). Left to themselves, Bubble Tea and its
// renderer would each detect again, each asking tmux. Run hands the program
// lipgloss's profile (tea.WithColorProfile) and an environment without TMUX
// (termEnv), so the renderer's own detection, whose result the program
// overrides anyway, does not ask tmux a second time; nothing else in Bubble
// Tea or its renderer reads TMUX. The background colour (dark or light) is
// asked with tea.RequestBackgroundColor: the first frame does not wait for
// the answer (dark until it comes).

// stdoutProfile is the colour profile lipgloss detected for stdout.
func stdoutProfile() colorprofile.Profile { return lipgloss.Writer.Profile }

// termEnv is env without TMUX, for the program once the profile is known.
func termEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "TMUX=") })
}
