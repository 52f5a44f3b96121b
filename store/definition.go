package store

import "github.com/shipkey/shipkey/auth"

// Definition is what a key is: where its realm is, which client speaks to
// it and how (auth.Connection), and how it obtains tokens. It is declared
// here once; every encoding derives from it by its tags — config.toml's
// [[keys]] tables (toml), the index record in state.db and a team's record
// in etcd (json names, CBOR and JSON), Import, the rebuild of the index —
// and every value that carries a key's definition (Key, ImportKey, NewKey,
// the team's record) embeds it. Adding a field is one line here (and its
// field in the form); TestKeyEntryEveryFieldPersists checks the index
// record, config.toml and Key, and store/team's
// TestDefinitionSurvivesTheTeamRecord the team's record.
type Definition struct {
	auth.Connection
	// Grant is how the key obtains tokens; empty (every key written before
	// grants existed) is the password grant.
	Grant auth.GrantType `toml:"grant,omitempty" json:"grant,omitempty"`
	// CallbackPort is the authorization code grant's fixed loopback port
	// (0: an ephemeral one).
	CallbackPort int    `toml:"callback_port,omitempty" json:"callback_port,omitempty"`
	Username     string `toml:"username" json:"username,omitempty"`
	// RememberPassword: the password is kept in the secrets backend and used
	// to log in again.
	RememberPassword bool `toml:"remember_password" json:"remember_password,omitempty"`
	// APIURL is the base URL of the API the key's tokens are for: a path
	// given to shipkey api or curl is resolved against it. Empty: none
	// (only full URLs work). Set with keys new/keys set --api-url.
	APIURL string `toml:"api_url,omitempty" json:"api_url,omitempty"`
	// AssertionFile or AssertionCmd is where the jwt-bearer grant reads its
	// assertion (a trusted external issuer's token), again at every
	// renewal: a file, or a command (split at spaces, run without a shell)
	// that prints one. The assertion itself is never stored.
	AssertionFile string `toml:"assertion_file,omitempty" json:"assertion_file,omitempty"`
	AssertionCmd  string `toml:"assertion_cmd,omitempty" json:"assertion_cmd,omitempty"`
	// ClientAssertionFile or ClientAssertionCmd is, likewise, where the
	// client_assertion method reads the client's assertion.
	ClientAssertionFile string `toml:"client_assertion_file,omitempty" json:"client_assertion_file,omitempty"`
	ClientAssertionCmd  string `toml:"client_assertion_cmd,omitempty" json:"client_assertion_cmd,omitempty"`
}
