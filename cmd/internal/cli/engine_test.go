package cli

import "github.com/shipkey/shipkey/store/team/etcdteam"

// The tests run the command line with the team engine, as shipkey-team does
// (testscript runs this test binary as "shipkey"); the hand-off from the
// shipkey binary is tested on the real binaries (program_test.go, fleet).
func init() { newTeamEngine = etcdteam.New }
