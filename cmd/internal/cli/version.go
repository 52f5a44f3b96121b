package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time:
// go build -ldflags "-X github.com/shipkey/shipkey/cmd/internal/cli.version=v1.2.3" ./cmd/...
var version = ""

// versionString is the build's version: the ldflags value, else the module
// version from the build info, else "devel".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newCmdVersion(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print shipkey's version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(f.IO.Out, "shipkey "+versionString())
			return err
		},
	}
}
