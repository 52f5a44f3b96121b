package scryptcost

import (
	"os"
	"strings"
	"testing"
)

// A release is built by goreleaser from .goreleaser.yaml (through
// .ci/release.sh): neither may set the work factor, and a build without the
// linker flag, as this test binary is, keeps age's default.
func TestReleaseKeepsAgesDefault(t *testing.T) {
	if WorkFactor != 0 {
		t.Fatalf("WorkFactor %d in a build without the linker flag", WorkFactor)
	}
	for _, f := range []string{"../../.goreleaser.yaml", "../../.ci/release.sh"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "scryptcost") {
			t.Errorf("%s sets the scrypt work factor of a test build", f)
		}
	}
}
