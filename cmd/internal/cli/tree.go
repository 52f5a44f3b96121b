package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// CommandTree is the whole command tree under the name program (shipkey or
// TeamBinary), for what is generated from it: the man pages and shell
// completions a release ships (cmd/internal/gendocs). Building it opens,
// reads and runs nothing.
func CommandTree(program string) *cobra.Command {
	root := newCmdRoot(newFactory(systemIO(), os.Getenv), "")
	root.Use = program
	return root
}
