package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The build's identity, set by a release build (.goreleaser.yaml):
//
//	go build -ldflags "-X github.com/shipkey/shipkey/cmd/internal/cli.version=v1.2.3
//	  -X github.com/shipkey/shipkey/cmd/internal/cli.commit=<sha>
//	  -X github.com/shipkey/shipkey/cmd/internal/cli.date=<RFC 3339>" ./cmd/...
//
// Left empty, buildInfo reads them from the binary's build info.
var version, commit, date string

// build is what `shipkey version` reports.
type build struct {
	Version   string // v1.2.3, or "devel" (a build from a checkout)
	Commit    string // the VCS revision; "" when unknown
	Date      string // when it was built (ldflags) or committed (VCS); "" when unknown
	Modified  bool   // the checkout had changes not committed
	GoVersion string // the Go toolchain that built it
	Platform  string // GOOS/GOARCH
}

// buildInfo is this binary's build: the ldflags values first, then what the
// go command recorded (the module version of `go install …@vX`, the VCS
// revision and time of a build in a checkout), else "devel".
func buildInfo() build {
	b := build{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.GoVersion = bi.GoVersion
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				if b.Date == "" {
					b.Date = s.Value
				}
			case "vcs.modified":
				b.Modified = commit == "" && s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// versionString is the build's version alone.
func versionString() string { return buildInfo().Version }

func newCmdVersion(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print shipkey's version, commit, build date and Go version",
		Long: `Print the version of this shipkey, the commit it was built from, when it
was built, and the Go version and platform that built it. A release build
carries all of them; a build from a checkout says "devel" and the commit
when the go command recorded it.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := buildInfo()
			c := b.Commit
			switch {
			case c == "":
				c = "unknown"
			case b.Modified:
				c += " (with changes not committed)"
			}
			d := b.Date
			if d == "" {
				d = "unknown"
			}
			f.IO.OutText().Linef("shipkey %s\ncommit: %s\nbuilt:  %s\ngo:     %s %s", b.Version, c, d, b.GoVersion, b.Platform)
			return nil
		},
	}
}
