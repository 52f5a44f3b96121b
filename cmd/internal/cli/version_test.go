package cli

import (
	"strings"
	"testing"
)

// The ldflags values (a release build) win over the build info; without
// them the build info or "devel" speaks, and the install hint for the team
// program names the same version, or the checkout for a devel build.
func TestVersionFromLdflagsElseBuildInfo(t *testing.T) {
	// Not parallel: it sets the package's ldflags variables.
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })

	version, commit, date = "", "", ""
	b := buildInfo()
	if b.Version != "devel" || b.GoVersion == "" || !strings.Contains(b.Platform, "/") {
		t.Fatalf("a test binary's build: %+v, want devel with the Go version and platform", b)
	}
	if h := teamInstallHint(b.Version); !strings.Contains(h, "go install ./cmd/"+TeamBinary) {
		t.Fatalf("devel hint: %q", h)
	}

	version, commit, date = "v1.2.3", "0123abc", "2026-11-26T03:00:00Z"
	b = buildInfo()
	if b.Version != "v1.2.3" || b.Commit != "0123abc" || b.Date != "2026-11-26T03:00:00Z" || b.Modified {
		t.Fatalf("ldflags build: %+v", b)
	}
	if h := teamInstallHint(versionString()); !strings.Contains(h, "release archives and packages") ||
		!strings.Contains(h, "go install github.com/shipkey/shipkey/cmd/"+TeamBinary+"@v1.2.3") {
		t.Fatalf("release hint: %q", h)
	}
}
