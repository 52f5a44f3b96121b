// Command shipkey-team is shipkey with the team engine linked in: team keys
// shared through etcd (store/team/etcdteam). shipkey hands it every command
// that needs the engine, with the same arguments; it can also be run
// directly, and does everything shipkey does.
package main

import (
	"os"

	"github.com/shipkey/shipkey/cmd/internal/cli"
	"github.com/shipkey/shipkey/store/team/etcdteam"
)

func main() {
	os.Exit(cli.Main(cli.Program{NewTeam: etcdteam.New}))
}
