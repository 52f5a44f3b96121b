package tui

import (
	"slices"
	"testing"
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
