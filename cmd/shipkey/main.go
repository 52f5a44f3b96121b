// Command shipkey manages OAuth 2.0 tokens and API keys for the Shipping
// Service API: it gets API keys by the password grant (and the others),
// hands out (and refreshes) their access tokens to scripts, inspects tokens,
// and opens an interactive terminal app when run without arguments.
//
// It links no etcd client, so that a cached `shipkey token` costs little
// more than any Go program's start: a command that needs the team engine is
// handed to shipkey-team (cmd/shipkey-team), which is the same command line
// with it. The commands live in package cli; they never take a secret on the
// command line, print one in an error, or write one to a plaintext file.
package main

import (
	"os"

	"github.com/shipkey/shipkey/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.Program{}))
}
