package tui

import (
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/colorprofile"
)

// Terminal capabilities are detected once, before the first frame. Left to
// themselves, Bubble Tea and its renderer each run colorprofile.Detect, and
// inside tmux each of those runs `tmux info` (about 11 ms apiece) to learn
// whether tmux passes true colour. Run detects the profile once and hands
// it to the program (tea.WithColorProfile), with an environment that lacks
// TMUX (termEnv), so the renderer's own detection, whose result the program
// overrides anyway, does not ask tmux again. Nothing else in Bubble Tea or
// its renderer reads TMUX.

// detectProfile is the colour profile of out: from TERM, COLORTERM,
// NO_COLOR and terminfo, and `tmux info` only inside tmux when those leave
// true colour undecided.
func detectProfile(out io.Writer, env []string) colorprofile.Profile {
	return colorprofile.Detect(out, env)
}

// termEnv is env without TMUX, for the program once detectProfile has run.
func termEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "TMUX=") })
}
