package tui

// opKind names an operation the app asks of the store. Results are keyed on
// it; String is the word used in messages ("refresh failed: …").
type opKind int

const (
	opNone opKind = iota
	opCreate
	opLogin
	opRefresh
	opOpen    // read a key and its token set (no network)
	opInspect // read a key's token set for the inspector
	opLogout
	opDelete
	opRename
	opSetDefault
	opMarkUsed
)

func (o opKind) String() string {
	return [...]string{"", "create", "log in", "refresh", "open", "inspect", "log out", "delete", "rename", "set default", "mark used"}[o]
}

// slot is a kind of request of which only the latest answer counts.
type slot int

const (
	slotKeys    slot = iota // the key list
	slotCreate              // the Get API Key form's request
	slotOp                  // an operation on the details key
	slotInspect             // the inspector's token load and signature checks
	slotLive                // the server check of the details key
	slotStamp               // the store's change stamp
	slotRequest             // the Request screen's API request
	slotCount
)

// requests is the bookkeeping of asynchronous requests: a source of ids,
// the latest id per slot (an answer with another id is stale) and how many
// requests the spinner waits for.
type requests struct {
	seq      int
	latest   [slotCount]int
	inflight int
}

// next returns a fresh id that belongs to no slot.
func (r *requests) next() int { r.seq++; return r.seq }

// start returns a fresh id and makes it the latest of s.
func (r *requests) start(s slot) int {
	id := r.next()
	r.latest[s] = id
	return id
}

// current reports whether id is the latest request of s.
func (r *requests) current(s slot, id int) bool { return id != 0 && r.latest[s] == id }

// pending reports whether s has a request whose answer has not arrived.
func (r *requests) pending(s slot) bool { return r.latest[s] != 0 }

// done marks the answer of s's latest request as arrived.
func (r *requests) done(s slot, id int) {
	if r.latest[s] == id {
		r.latest[s] = 0
	}
}

// begin counts a request the spinner waits for; end counts it done.
func (r *requests) begin() { r.inflight++ }
func (r *requests) end() {
	if r.inflight > 0 {
		r.inflight--
	}
}
