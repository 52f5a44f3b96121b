package tui

import "github.com/shipkey/shipkey/auth"

// grantView is how the app shows one grant: its name, the keys table's
// cell, the form's opening line, and the form fields it needs beyond the
// connection's (Auth URL, Realm, Client ID, Label, Scope and the advanced
// options every grant has). Adding a grant to auth's table is one row here.
type grantView struct {
	title string // "device code"
	cell  string // the keys table's cell, at most grantCellWidth cells
	about string // the form's first line
	// fields the grant needs besides the connection's.
	fields []int
	// public: the grant may run as a public client (no secret); the form
	// offers the toggle. A grant that is not public always asks the secret.
	public bool
	// waits: the grant waits for a person (a code to enter, a browser to
	// come back): the app shows the sign-in screen while it runs.
	waits bool
}

// grantCellWidth is the keys table's Grant column.
const grantCellWidth = 8

var grantViews = map[auth.GrantType]grantView{
	auth.GrantPassword: {
		title: "password", cell: "password",
		about:  "The password grant against a Keycloak realm: client and user credentials.",
		fields: []int{fieldUsername, fieldPassword}, public: true,
	},
	auth.GrantClientCredentials: {
		title: "client credentials", cell: "client",
		about: "Client credentials: a key for a service or a CI job, no person behind it.",
	},
	auth.GrantDeviceCode: {
		title: "device code", cell: "device",
		about:  "Device code: approve with a short code in a browser on any device.",
		public: true, waits: true,
	},
	auth.GrantAuthCode: {
		title: "browser sign-in", cell: "browser",
		about:  "Browser sign-in (authorization code with PKCE) on this machine.",
		fields: []int{fieldCallbackPort}, public: true, waits: true,
	},
	auth.GrantJWTBearer: {
		title: "JWT bearer", cell: "jwt",
		about:  "JWT bearer: a trusted issuer's token (a CI job's identity token) for the key's tokens.",
		fields: []int{fieldAssertionFile}, public: true,
	},
}

// viewOf is the row of grant t (empty: password); an unknown grant shows
// under its stored name.
func viewOf(t auth.GrantType) grantView {
	if v, ok := grantViews[t.Or()]; ok {
		return v
	}
	name := string(t)
	return grantView{title: name, cell: name}
}

// needs reports whether the grant asks for form field i beyond the
// connection's.
func (g grantView) needs(i int) bool {
	for _, f := range g.fields {
		if f == i {
			return true
		}
	}
	return false
}
