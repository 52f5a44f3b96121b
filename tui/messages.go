package tui

import (
	"time"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/store"
)

// Result messages: what a command reports back. Each carries the id (seq) of
// the request, and the key label where one is concerned, so that a result
// that lands after the user moved on is recognised and dropped.

// keysLoadedMsg answers loadKeys.
type keysLoadedMsg struct {
	seq     int
	keys    *keyIndex   // nil on error
	picks   keyPicks    // the keys the load kept whole
	current string      // the resolved default key, "" when none
	stamp   store.Stamp // the store's stamp read before the keys
	renew   renewHeap   // the keys' due renewals (renew.go)
	err     error
}

// changesMsg answers loadChanges: what changed since the stamp of the key
// list.
type changesMsg struct {
	seq int
	ch  store.Changes
	err error
}

// stampMsg answers checkStamp: the store's stamp now.
type stampMsg struct {
	seq   int
	stamp store.Stamp
	err   error
}

// keyTokensMsg answers the operations that end with a key and its token set:
// create, login, refresh, open.
type keyTokensMsg struct {
	seq    int
	op     opKind // opCreate, opLogin, opRefresh, opOpen, opInspect
	label  string
	auto   bool // an automatic refresh-ahead
	key    store.Key
	tokens *auth.TokenSet // with secrets; nil when there is none
	err    error
}

// opDoneMsg answers operations that only succeed or fail: logout, delete,
// rename, set default, mark used.
type opDoneMsg struct {
	seq   int
	op    opKind
	label string
	to    string         // rename: the new label
	end   auth.EndResult // logout: what the server did
	err   error
}

// copyReadyMsg carries a token fetched for copying from the key list.
type copyReadyMsg struct {
	seq    int
	label  string
	header bool
	tokens *auth.TokenSet
	err    error
}

// verifiedMsg answers a signature check in the inspector.
type verifiedMsg struct {
	seq   int
	which int // index of the token in the inspector
	v     auth.Verification
}

// livenessMsg answers a server check of the details key's access token.
type livenessMsg struct {
	seq   int
	label string
	live  auth.Liveness
	err   error
}

// grantPromptMsg carries what an interactive grant asks of the person (a
// device code, a URL to open), read from the grant's channel (grantRun).
type grantPromptMsg struct {
	seq    int
	prompt auth.Prompt
}

// clientKeyMsg carries a generated client key's public key set (JWKS),
// to register with the realm before the grant goes on (grantRun).
type clientKeyMsg struct {
	seq  int
	jwks string
}

// browserMsg answers an attempt to open a sign-in URL in a browser.
type browserMsg struct {
	auto bool // opened on the grant's first prompt, not asked with o
	err  error
}

// requestDoneMsg answers a request of the Request screen: its answer, or
// why there was none.
type requestDoneMsg struct {
	seq    int
	answer *apiAnswer
	err    error
}

// typedRedrawMsg draws what was typed into the paste field since its last
// frame (Model.typedRedraw).
type typedRedrawMsg struct{}

// tickMsg is the countdown tick (tick.go: when the text shown changes).
type tickMsg struct {
	gen int
	at  time.Time
}

// clipCopiedMsg reports where a copy went (dests, in the toast's words) and
// what refused it (failed, never holding the text).
type clipCopiedMsg struct {
	gen           int
	what          string
	dests, failed []string
	sum           [32]byte // sha256 of the text, to clear the native clipboard only while it holds it
}

// clipClearMsg fires when the copied token should leave the clipboard.
type clipClearMsg struct{ gen int }

// Actions: the intent a screen returns from its Update; the root applies it.
type action interface{ isAction() }

type (
	actBack         struct{}
	actQuit         struct{}
	actOpenForm     struct{}
	actOpenKeys     struct{}
	actToggleHelp   struct{}
	actOpenDetails  struct{ label string }
	actInspectKey   struct{ label string }
	actInspectPaste struct{}
	actSubmitKey    struct{ sub submission }
	actRefresh      struct {
		label string
		auto  bool
	}
	actLogin  struct{ label, password string }
	actLogout struct{ label string }
	actCopy   struct {
		label  string
		header bool
		tokens *auth.TokenSet // nil: fetch it first
	}
	actDelete     struct{ label string }
	actRename     struct{ label, newLabel string }
	actSetDefault struct{ label string }
	actCheckLive  struct{ label string }
)

func (actBack) isAction()         {}
func (actQuit) isAction()         {}
func (actOpenForm) isAction()     {}
func (actOpenKeys) isAction()     {}
func (actToggleHelp) isAction()   {}
func (actOpenDetails) isAction()  {}
func (actInspectKey) isAction()   {}
func (actInspectPaste) isAction() {}
func (actSubmitKey) isAction()    {}
func (actRefresh) isAction()      {}
func (actLogin) isAction()        {}
func (actLogout) isAction()       {}
func (actCopy) isAction()         {}
func (actDelete) isAction()       {}
func (actRename) isAction()       {}
func (actSetDefault) isAction()   {}
func (actCheckLive) isAction()    {}

// actCancelGrant gives up an interactive grant: its context is cancelled
// and nothing is stored.
type actCancelGrant struct{}

func (actCancelGrant) isAction() {}

// actRegistered: the person registered the generated client key; the
// grant goes on.
type actRegistered struct{}

func (actRegistered) isAction() {}

// actCopyText copies text that is not a token (a device code, a URL).
type actCopyText struct{ text, what string }

func (actCopyText) isAction() {}

// actOpenBrowser opens the sign-in URL in a browser.
type actOpenBrowser struct{}

func (actOpenBrowser) isAction() {}

// actVerifyJWKS asks to check the inspected tokens' signatures again,
// against the key set at the inspector's JWKS URL (or, with none, the
// realms of the store's connections).
type actVerifyJWKS struct{}

func (actVerifyJWKS) isAction() {}

// actInspectToken asks to inspect a pasted token.
type actInspectToken struct{ raw string }

func (actInspectToken) isAction() {}

// actSendRequest sends a request of the Request screen.
type actSendRequest struct {
	call  apiCall
	typed store.Request // the fields as typed, for the history
}

func (actSendRequest) isAction() {}

// actCancelRequest cancels the Request screen's request in flight; the
// values typed stay.
type actCancelRequest struct{}

func (actCancelRequest) isAction() {}

// actOpenRequest opens the Request screen.
type actOpenRequest struct{}

func (actOpenRequest) isAction() {}
