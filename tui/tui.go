package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/internal/browser"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
	"github.com/shipkey/shipkey/store/audit"
)

// Prefill fills the Get API Key form (the demo fills it all). Secrets given
// here are used as typed; the form never prefills secrets from a stored key.
type Prefill struct {
	AuthURL, Realm, ClientID, ClientSecret, Username, Password, Label, Scope string
	// Grant is the grant chosen (empty: password).
	Grant auth.GrantType
	// The advanced connection options (shown folded unless one differs
	// from its default).
	TokenURL, Issuer string
	// ClientAuth is the client authentication; BasicAuth and PublicClient
	// are its aliases (client_secret_basic, none), as on the CLI.
	ClientAuth   auth.ClientAuthMethod
	BasicAuth    bool
	PublicClient bool
	// ClientKeyFile and ClientCertFile are the paths of the client's key
	// and certificate; GenerateClientKey makes a key instead.
	ClientKeyFile, ClientCertFile string
	GenerateClientKey             bool
	DPoP                          bool
	NoPAR                         bool // the authorization code grant does not push its request
	CallbackPort                  int
}

func (p Prefill) empty() bool { return p == Prefill{} }

// Options configure the TUI.
type Options struct {
	Store *store.Store // required
	Auth  *auth.Client // checks signatures in the inspector; nil: not checked
	// Now is the clock for countdowns and expiries (default time.Now).
	Now func() time.Time
	// Prefill fills the Get API Key form.
	Prefill Prefill
	// Demo shows a "demo server" badge.
	Demo bool
	// Clipboard writes the native clipboard; nil runs the system's clipboard
	// program (wl-copy, pbcopy, xclip, xsel or clip.exe, looked up on the
	// first copy). Copies also go to a named tmux buffer inside
	// tmux ($TMUX set), else out by OSC 52 (tea.SetClipboard), which works
	// over SSH.
	Clipboard func(string) error
	// ClipboardRead reads the native clipboard back, so that shipkey clears it
	// only while it still holds what shipkey put there. Nil with Clipboard
	// set: the native clipboard is never cleared (OSC 52 still is).
	ClipboardRead func() (string, error)
	// Notices, when set, shows on the status line what is written to it
	// while the app runs (pass the same value as the store's Warn writer).
	Notices *Notices
	// Backend, when set, is used instead of Store: a store with more keys
	// (team keys: the key service, store/keys) behind the same interface.
	Backend Backend
	// TraceFirstFrame, when set, is a file to which Run appends the time
	// the first frame was written (EnvTraceFirstFrame).
	TraceFirstFrame string
	// API builds the HTTP client of the Request screen (the client of
	// `shipkey api`); nil: the screen says it cannot send.
	API APIClient
	// APIURL is the Request screen's URL for a key without an API URL of
	// its own (the demo's API), and the base a path is resolved against.
	APIURL string
	// Audit is the audit trail the Activity screen follows; nil: it is
	// off (the screen says so).
	Audit *audit.Log
	// Unlock, when set, unlocks the secrets: the app started without, on
	// a store with no key, so that Welcome and the inspector open at once.
	// It is used once, before the first request that keeps secrets (a new
	// key); a passphrase it needs is asked in the app, in a masked field
	// (a new one twice), never on the plain terminal.
	Unlock Unlocker
}

// config is what newModel needs; New builds it from Options, tests directly.
type config struct {
	backend   Backend
	verifier  Verifier
	now       func() time.Time
	prefill   Prefill
	demo      bool
	clipWrite func(string) error
	clipRead  func() (string, error)
	clipName  string     // what the toast calls the native clipboard
	tmux      tmuxRunner // inside tmux: copies go to a named tmux buffer
	// outerMux is "tmux" or "screen" when shipkey runs outside tmux ($TMUX
	// unset) but TERM names one: a tmux on the other side of SSH, whose
	// set-clipboard keeps each OSC 52 copy as a paste buffer the clear
	// cannot reach. The toasts say so.
	outerMux string
	theme    Theme
	// after schedules a timer (tea.Tick); tests record timers instead.
	after func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
	// changes, when set, reports changes of the store's files (watchStore):
	// the stamp is then checked when they change instead of every second.
	changes <-chan struct{}
	// audit is the trail the Activity screen shows; activityChanges
	// reports changes of its file.
	audit           *audit.Log
	activityChanges <-chan struct{}
	// grants the form offers (default auth.Grants()).
	grants []auth.GrantType
	// unlock unlocks the secrets before the first new key (Options.Unlock).
	unlock Unlocker
	// openURL opens a sign-in URL in a browser (internal/browser.Open);
	// envOnly: only with $BROWSER (a device code: the person may be on
	// another machine).
	openURL func(url string, envOnly bool) error
	// api builds the Request screen's HTTP client; apiURL is its default
	// URL (Options.API, Options.APIURL).
	api    APIClient
	apiURL string
	// limitHeap, when set, is told the size of each key list loaded
	// (limitHeap below; tests leave the process's collector alone).
	limitHeap func(listBytes int64)
}

// Model is the root tea.Model: it owns the screens, the store and every side
// effect. Screens return intent; the root applies it.
type Model struct {
	writes   *storeWrites // the store writes Run finishes after the program
	c        *common
	cfg      config
	backend  Backend
	ctx      context.Context
	settings store.Settings

	width, height int
	active        screenID
	history       []screenID
	showHelp      bool
	// unlocked: cfg.unlock ran and succeeded (the app started locked).
	unlocked bool
	unlock   *unlockPrompt // its passphrase field, over the form while open
	help     help.Model
	helpPane pane // the help screen's scroll
	// createCancel cancels the form's token request in flight (not a
	// grant that waits for a person: that is m.grant).
	createCancel context.CancelFunc
	// requestCancel cancels the Request screen's request in flight.
	requestCancel context.CancelFunc

	welcome   *welcome
	form      *form
	details   *details
	keyList   *keyList
	inspector *inspector
	signin    *signin
	request   *request
	activity  *activity

	grant *grantRun // the interactive grant in flight, nil when none
	renew renewals  // the keys' background renewals (renew.go)

	keys    *keyIndex // the key list, as last loaded (nil before)
	current string    // the key "1" opens: the default, else the last opened
	// curKey is the current key whole, when known (a load kept it, or it
	// was read for its details); newest, the most recently created key,
	// whole (the form is prefilled from it). Every other key is a row of
	// keys, read from the store when a screen needs it.
	curKey, newest *store.Key
	loaded         bool        // the first key list has arrived
	stamp          store.Stamp // the store's stamp when the key list was read
	req            requests    // ids of the requests in flight

	spinner  spinner.Model
	spinning bool

	tickGen int
	ticking bool
	tickAt  time.Time // when the pending tick fires
	recheck bool      // the store changed while a key list was read (watch.go)
	// foot is the footer last rendered and what it was rendered for.
	foot struct{ key, text string }
	// shown is the text of the last frame (View's, or the one handleTick
	// rendered for the View that follows it). reuse: the next View returns
	// it as it is (set by handleTick, and by a stamp poll that found no
	// change right after a View; View clears it); fresh: no Update ran
	// since shown was rendered.
	shown        string
	reuse, fresh bool
	// typedRedraw: characters typed into the inspector's paste field are
	// drawn by one redraw (typedFrame after the first), not one a key: a
	// token sent without bracketed paste comes as a key press a character.
	typedRedraw bool
	renders     int // frames rendered (render): the paste tests count them
	// preloaded is what Init runs instead of reading the key list: what
	// the list Run read before the program started led to, or the wait for
	// the list Run is reading.
	preloaded tea.Cmd
	preread   bool // Run read (or is reading) the first key list

	clipGen int
	clipSum [32]byte   // sha256 of what shipkey last copied (never the text)
	toast   text.Clean // untrusted text in it was cleaned where it entered
	toastOK bool
	notice  text.Clean // a warning from below (Notices), until the next screen change

	quitting bool
}

// New builds the root model from opts.
func New(opts Options) *Model {
	cfg := config{
		now:       opts.Now,
		prefill:   opts.Prefill,
		demo:      opts.Demo,
		clipWrite: opts.Clipboard,
		clipRead:  opts.ClipboardRead,
		clipName:  nativeClipboardName(),
		tmux:      execTmux(),
		outerMux:  outerMultiplexer(os.Getenv("TMUX"), os.Getenv("TERM")),
		theme:     Theme{Dark: true, NoColor: os.Getenv("NO_COLOR") != ""},
		api:       opts.API,
		apiURL:    opts.APIURL,
		unlock:    opts.Unlock,
		audit:     opts.Audit,
	}
	if opts.Store != nil {
		cfg.backend = opts.Store
	}
	if opts.Backend != nil {
		cfg.backend = opts.Backend
	}
	if opts.Auth != nil {
		cfg.verifier = opts.Auth
	}
	if cfg.clipWrite == nil {
		native := newNativeClipboard()
		cfg.clipWrite, cfg.clipRead = native.Write, native.Read
	}
	return newModel(cfg)
}

// firstFrameBy is how long after the process started the first frame waits
// for the first key list at the latest (a process that took longer to get
// here does not wait at all).
const firstFrameBy = 25 * time.Millisecond

// bigIndex is the size of state.db from which the first frame does not wait
// for the key list (about 4k keys, whose list takes 10 ms and more to read).
const bigIndex = 4 << 20

// heapFloor is the app's soft memory limit at the least (limitHeap).
const heapFloor = 40 << 20

// limitHeap sets the runtime's soft memory limit for an app that holds a
// key list of listBytes: the larger of heapFloor and 3 lists. A reload
// holds two lists for a while (the one shown and the one being read) and
// the walk's garbage, about 1.5 KB a key; the collector's goal alone (GOGC,
// 50 in the app) would let the heap grow to 1.5 times that, at 100k keys
// 70 MiB of resident memory instead of 51 at start-up. Under heapFloor the
// collector works harder during a reload of a large list; from 3 lists
// (the GOGC=50 goal of two) up it never has to, whatever the store's size.
// Small lists never come near it.
func limitHeap(listBytes int64) {
	debug.SetMemoryLimit(max(heapFloor, 3*listBytes))
}

// processStart is about when the process started (this package's init).
var processStart = time.Now()

// frameRate caps how often Bubble Tea's renderer wakes to flush a frame. Its
// ticker runs even when nothing changed, and that ticker is what an idle
// screen costs: measured under tmux, about 1% of a core at the default 60,
// about 0.5% at 30, with keys still echoed within a frame (33 ms). Nothing
// here animates faster than the 1 s countdown or the spinner.
const frameRate = 30

// Run runs the TUI until the user quits, ctx ends, or a SIGINT, SIGTERM or
// SIGHUP arrives: each of those ends the program within a frame and restores
// the terminal. Bubble Tea's own signal handler is off: it sends its quit
// message on an unbuffered channel and blocks forever when the event loop
// has already ended (for example because ctx was cancelled by the same
// SIGTERM), so the process never exited. Ours asks the program to quit with
// Program.Quit, which never blocks on a program that has ended.
func Run(ctx context.Context, opts Options) error {
	m := New(opts)
	m.ctx = ctx
	if os.Getenv("GOMEMLIMIT") == "" {
		m.cfg.limitHeap = limitHeap // this process is the app's
	}
	// The first frame is drawn before any message reached the model: it
	// has the terminal's size, and the first key list when that is read
	// within firstFrameBy of the process's start (with a store opened
	// ReadOnce, the one read of config.toml and state.db; the store then
	// reads afresh). A longer read (100k keys) shows "Loading keys…" first.
	if w, h, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
		m.setSize(w, h)
	}
	out := newTerminal(os.Stdout, opts.TraceFirstFrame)
	ended := make(chan struct{})
	defer close(ended)
	m.preload(opts.Store, out.firstFrame, ended)
	defer m.watchFiles()()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(frameRate), tea.WithoutSignalHandler(),
		tea.WithColorProfile(stdoutProfile()), tea.WithEnvironment(termEnv(os.Environ())), tea.WithOutput(out))
	if opts.Notices != nil {
		// Send blocks until the program's loop runs; deliver from a goroutine.
		opts.Notices.attach(func(msg tea.Msg) { go p.Send(msg) })
		defer opts.Notices.detach()
	}
	defer quitOnSignals(p)()
	_, err := p.Run()
	m.writes.finish()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // ended by ctx (a signal the caller handles): the terminal is restored
	}
	return err
}

// preload reads the first key list for the first frame (Run): it waits for
// the read until firstFrameBy, then leaves the rest to Init (preloaded). A
// large index is read once the first frame is out: its read would miss
// firstFrameBy anyway, and meanwhile take the CPU the first frame needs
// (at 100k keys, 25 ms of it). Nothing waits once ended is closed.
func (m *Model) preload(st *store.Store, firstFrame, ended <-chan struct{}) {
	big := st != nil && st.IndexBytes() > bigIndex
	loaded := make(chan tea.Msg, 1)
	go func(load tea.Cmd) {
		if big {
			select {
			case <-firstFrame:
			case <-ended:
				return
			}
		}
		msg := load()
		if st != nil {
			st.EndReadOnce()
		}
		loaded <- msg
	}(m.loadKeys())
	wait := func() tea.Msg {
		select {
		case msg := <-loaded:
			return msg
		case <-ended:
			return nil
		}
	}
	if big {
		m.preloaded = wait
	} else {
		select {
		case msg := <-loaded:
			_, m.preloaded = m.Update(msg)
		case <-time.After(time.Until(processStart.Add(firstFrameBy))):
			m.preloaded = wait
		}
	}
	m.preread = true
}

// watchFiles watches the store's files and the audit trail's for changes
// made by other processes, and returns what stops the watches.
func (m *Model) watchFiles() (stop func()) {
	var watches []*storeWatch
	if files := stampFiles(m.cfg.backend); files != nil {
		// Changes by other shipkey processes are seen through inotify; a
		// store whose folders cannot be watched (not created yet), and a
		// backend whose changes do not all land in files (team keys), is
		// polled.
		if sw, err := watchStore(files); err == nil {
			watches = append(watches, sw)
			m.cfg.changes = sw.changes
		}
	}
	if l := m.cfg.audit; l != nil {
		// The Activity screen follows the trail's file the same way.
		if err := os.MkdirAll(l.Dir(), 0o700); err == nil {
			if sw, err := watchStore([]string{l.Path()}); err == nil {
				watches = append(watches, sw)
				m.cfg.activityChanges = sw.changes
			}
		}
	}
	return func() {
		for _, sw := range slices.Backward(watches) {
			sw.Close()
		}
	}
}

// quitOnSignals asks p to quit when one of quitSignals arrives, until the
// returned stop is called.
func quitOnSignals(p *tea.Program) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, quitSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			p.Quit()
		case <-done:
		}
	}()
	return func() {
		close(done)
		signal.Stop(sigs)
	}
}

// quitSignals end the app.
var quitSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func newModel(cfg config) *Model {
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.after == nil {
		cfg.after = tea.Tick
	}
	if cfg.grants == nil {
		cfg.grants = auth.Grants()
	}
	if cfg.openURL == nil {
		cfg.openURL = func(url string, envOnly bool) error {
			return browser.Open(url, browser.Options{EnvOnly: envOnly})
		}
	}
	if cfg.clipName == "" {
		cfg.clipName = "system clipboard"
	}
	m := &Model{
		writes:   &storeWrites{},
		cfg:      cfg,
		backend:  cfg.backend,
		ctx:      context.Background(),
		settings: store.Settings{ClipboardClear: 30 * time.Second, AutoRefresh: true},
	}
	if m.backend != nil {
		m.settings = m.backend.Settings()
	}
	m.c = &common{styles: NewStyles(cfg.theme), keys: DefaultKeyMap(), now: cfg.now()}
	m.help = help.New()
	m.help.Styles = m.c.styles.Help
	m.helpPane = newPane(m.c)
	m.spinner = spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(m.c.styles.Spinner))
	spin := func() string { return m.spinner.View() }
	m.welcome = newWelcome(m.c)
	m.form = newForm(m.c, spin, cfg.grants)
	m.unlock = newUnlockPrompt(m.c)
	m.details = newDetails(m.c, spin)
	m.details.auto = m.settings.AutoRefresh
	m.keyList = newKeyList(m.c)
	m.renew.failed = map[string]renewFailure{}
	m.keyList.renewFailed = m.renew.failed
	m.inspector = newInspector(m.c, spin)
	m.signin = newSignin(m.c)
	m.request = newRequest(m.c, spin, cfg.apiURL)
	m.activity = newActivity(m.c, cfg.audit)
	m.setSize(80, 24)
	return m
}

// Init asks the terminal's background colour, loads the keys and starts the
// countdown tick of the welcome screen.
func (m *Model) Init() tea.Cmd {
	load := m.loadKeys
	if m.preread {
		pre := m.preloaded
		m.preread, m.preloaded = false, nil
		load = func() tea.Cmd { return pre }
	}
	return tea.Batch(tea.RequestBackgroundColor, load(), m.ensureTick(), m.listenChanges(), m.listenActivity())
}

// Update is a dispatcher: each kind of message has its handler. Afterwards
// the clocks of the requests in flight follow what the handler changed.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.c.now = m.cfg.now()
	defer m.trackWaits()
	fresh := m.fresh
	m.fresh, m.reuse = false, false
	if s, ok := msg.(stampMsg); ok && fresh && s.err == nil && s.stamp == m.stamp {
		// The store did not change (the stamp poll of an unwatched store,
		// every second): the frame stays as it is.
		defer func() { m.fresh, m.reuse = true, true }()
	}
	cmd := m.dispatch(msg)
	if m.typedIntoPaste(msg) {
		if m.typedRedraw && fresh {
			m.reuse = true // the redraw due shows this character too
		} else if !m.typedRedraw {
			m.typedRedraw = true
			cmd = tea.Batch(cmd, m.cfg.after(typedFrame, func(time.Time) tea.Msg { return typedRedrawMsg{} }))
		}
	}
	if _, ok := msg.(tickMsg); !ok {
		// Whatever changed, the countdowns move again within a second (the
		// tick then sleeps until the text changes).
		cmd = tea.Batch(cmd, m.ensureTick(), m.ensureSpinner())
	}
	return m, tea.Batch(cmd, m.armRenew())
}

// dispatch hands msg to its handler: the terminal's and the clock's
// messages, the key store's answers, the screens' answers; the rest goes
// to the active screen.
func (m *Model) dispatch(msg tea.Msg) tea.Cmd {
	if cmd, ok := firstTaker(msg, m.dispatchTerminal, m.dispatchKeys, m.dispatchScreens); ok {
		return cmd
	}
	return m.forward(msg)
}

// firstTaker is the command of the first handler that takes v (ok), in
// order; a handler of one concern returns ok false for what is not its.
func firstTaker[T any](v T, handlers ...func(T) (tea.Cmd, bool)) (cmd tea.Cmd, ok bool) {
	for _, h := range handlers {
		if cmd, ok := h(v); ok {
			return cmd, true
		}
	}
	return nil, false
}

// dispatchTerminal handles the terminal's messages (size, colours, keys,
// the wheel), the clocks' and the clipboard's; ok is false for others.
func (m *Model) dispatchTerminal(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setSize(msg.Width, msg.Height)
		return nil, true
	case tea.BackgroundColorMsg:
		m.handleBackground(msg.IsDark())
		return nil, true
	case tea.KeyPressMsg:
		return m.handleKey(msg), true
	case tea.MouseWheelMsg:
		return m.forward(msg), true
	case spinner.TickMsg:
		return m.handleSpinner(msg), true
	case tickMsg:
		return m.handleTick(msg), true
	case typedRedrawMsg:
		m.typedRedraw = false // this Update's View draws what was typed
		return nil, true
	case clipCopiedMsg:
		return m.handleClipCopied(msg), true
	case clipClearMsg:
		return m.handleClipClear(msg), true
	}
	return nil, false
}

// dispatchKeys handles the key store's answers: keys loaded and changed,
// a key's tokens, the unlock, operations, renewals; ok is false for
// others.
func (m *Model) dispatchKeys(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case keysLoadedMsg:
		return tea.Batch(m.handleKeysLoaded(msg), m.recheckAfterLoad()), true
	case changesMsg:
		return m.handleChanges(msg), true
	case keyTokensMsg:
		return m.handleKeyTokens(msg), true
	case unlockedMsg:
		return m.handleUnlocked(msg), true
	case unlockAskMsg:
		return m.handleUnlockAsk(msg), true
	case opDoneMsg:
		return m.handleOpDone(msg), true
	case copyReadyMsg:
		return m.handleCopyReady(msg), true
	case livenessMsg:
		return m.handleLiveness(msg), true
	case renewTickMsg:
		return m.handleRenewTick(msg), true
	case renewedMsg:
		return m.handleRenewed(msg), true
	case storeChangedMsg:
		return m.handleStoreChanged(), true
	case stampMsg:
		return m.handleStamp(msg), true
	}
	return nil, false
}

// dispatchScreens handles the answers for the screens: notices, the
// grants' browser, prompts and client key, signature checks, the Request
// and Activity screens'; ok is false for others.
func (m *Model) dispatchScreens(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case noticeMsg:
		m.notice = msg.text
		return nil, true
	case browserMsg:
		m.handleBrowser(msg)
		return nil, true
	case grantPromptMsg:
		return m.handleGrantPrompt(msg), true
	case clientKeyMsg:
		return m.handleClientKey(msg), true
	case verifiedMsg:
		m.req.end()
		m.inspector.verified(msg)
		return nil, true
	case requestDoneMsg:
		return m.handleRequestDone(msg), true
	case activityMsg:
		return m.handleActivity(msg), true
	case requestsLoadedMsg, requestsMsg:
		m.handleRequests(msg)
		return nil, true
	}
	return nil, false
}

// typedFrame is how long characters typed into the paste field wait for
// their redraw: under a frame, so typing by hand shows at once.
const typedFrame = 16 * time.Millisecond

// typedIntoPaste reports whether msg was a character typed into the
// inspector's paste field.
func (m *Model) typedIntoPaste(msg tea.Msg) bool {
	k, ok := msg.(tea.KeyPressMsg)
	return ok && k.Text != "" && m.active == screenInspector && !m.showHelp &&
		m.inspector.mode == inspectPasting && !key.Matches(k, m.c.keys.Enter)
}

// trackWaits starts or stops the clocks behind "waiting for the server…".
func (m *Model) trackWaits() {
	now := m.c.now
	m.details.wait.track(m.details.busy(), now)
	m.details.liveWait.track(m.details.liveState == liveChecking, now)
	m.form.wait.track(m.form.state == formSubmitting && !m.unlock.isOpen(), now) // not while a passphrase is typed
	m.request.wait.track(m.request.busy(), now)
}

// View renders the header, the active screen (or the full help), a status
// line and the short help.
func (m *Model) View() tea.View {
	if !m.reuse {
		m.shown = m.render()
	}
	m.reuse, m.fresh = false, true
	v := tea.NewView(m.shown)
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = windowTitle
	return v
}

// windowTitle is the terminal window's title while the app runs.
const windowTitle = "shipkey"

// render is the view's text.
func (m *Model) render() string {
	m.renders++
	if m.quitting {
		return ""
	}
	s := m.c.styles
	w := m.width
	head := s.Title.Render("shipkey") + s.Crumb.Render(" › "+m.active.String())
	if m.showHelp {
		head += s.Crumb.Render(" › Help")
	}
	var right []string
	if m.spinnerShown() {
		right = append(right, m.spinner.View())
	}
	if m.cfg.demo {
		right = append(right, s.Badge.Render("[demo server]"))
	}
	if len(right) > 0 {
		r := strings.Join(right, " ")
		gap := w - lipgloss.Width(head) - lipgloss.Width(r) - 1
		if gap >= 1 {
			head += strings.Repeat(" ", gap) + r
		}
	}
	bodyH := m.bodyHeight()
	var body string
	if m.showHelp {
		body = m.helpView(w, bodyH)
	} else {
		body = m.screen().View()
	}
	status := ""
	toastStyle := s.Toast
	if !m.toastOK {
		toastStyle = s.Error
	}
	if !m.toast.IsEmpty() {
		status = show(toastStyle, m.toast)
	}
	if !m.notice.IsEmpty() {
		if status != "" {
			status += "  "
		}
		status += show(s.Error, text.Concat(text.Trusted("⚠ "), m.notice))
	}
	if lipgloss.Width(status) > w {
		// Too wide for one line: the message wraps over the body's last
		// lines while it shows (the body keeps one at least), whole
		// rather than cut where it says what to do.
		var lines []string
		if !m.toast.IsEmpty() {
			lines = append(lines, wrapStyled(toastStyle, m.toast.String(), w)...)
		}
		if !m.notice.IsEmpty() {
			lines = append(lines, wrapStyled(s.Error, "⚠ "+m.notice.String(), w)...)
		}
		lines = lines[:min(len(lines), max(1, bodyH))]
		body = cutBody(body, w, bodyH+1-len(lines), s.Subtle)
		status = strings.Join(lines, "\n")
	}
	foot := m.footer()
	return fitBlock(strings.Join([]string{head, "", body, status, foot}, "\n"), w, m.height)
}

// cutBody is body's first keep lines, width wide. When the lines it cuts
// hold anything (the screen's own "↓ more" among them), the last line kept
// says "↓ more": what a wrapped message covers is not lost from sight.
func cutBody(body string, width, keep int, st lipgloss.Style) string {
	all := strings.Split(body, "\n")
	if keep <= 0 || len(all) <= keep {
		return fitBlock(body, width, keep)
	}
	kept := strings.Split(fitBlock(strings.Join(all[:keep], "\n"), width, keep), "\n")
	if strings.TrimSpace(ansi.Strip(strings.Join(all[keep:], ""))) != "" {
		kept = markMore(kept, width, false, true, st)
	}
	return strings.Join(kept, "\n")
}

// wrapStyled word-wraps plain text to width and renders each line in st.
func wrapStyled(st lipgloss.Style, plain string, width int) []string {
	lines := strings.Split(ansi.Wrap(plain, width, ""), "\n")
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return lines
}

// footer is the short help of the focused screen; "? help" always stays
// visible at its end, whatever gets cut for width. It is rendered again only
// when its bindings or the width changed (fitting it tries one length after
// another: most of a frame's rendering otherwise).
func (m *Model) footer() string {
	var k strings.Builder
	fmt.Fprintf(&k, "%d %t %t", m.width, m.showHelp, m.screen().Capturing())
	for _, b := range m.ShortHelp() {
		fmt.Fprintf(&k, "\x00%s\x00%s\x00%t", b.Help().Key, b.Help().Desc, b.Enabled())
	}
	if key := k.String(); key != m.foot.key {
		m.foot.key, m.foot.text = key, m.renderFooter()
	}
	return m.foot.text
}

// renderFooter renders the footer.
func (m *Model) renderFooter() string {
	h := m.help
	k := m.c.keys
	if m.showHelp {
		return m.shortHelp(m.ShortHelp(), m.width)
	}
	var rest []key.Binding
	for _, b := range m.ShortHelp() {
		if b.Help() != k.Help.Help() {
			rest = append(rest, b)
		}
	}
	help := k.Help
	if m.typing() {
		help = k.HelpTyping // ? is text here
	}
	h.SetWidth(0)
	tail := h.ShortHelpView([]key.Binding{help})
	sep := h.Styles.ShortSeparator.Inline(true).Render(h.ShortSeparator)
	head := m.shortHelp(rest, m.width-lipgloss.Width(tail)-lipgloss.Width(sep))
	if head == "" {
		return tail
	}
	return head + sep + tail
}

// shortHelp renders the bindings that fit on one line of width cells, and
// " …" when some had to go. (help.ShortHelpView alone may overflow: when the
// ellipsis does not fit either, it adds the next binding anyway.)
func (m *Model) shortHelp(bindings []key.Binding, width int) string {
	h := m.help
	h.SetWidth(0) // no cutting: measured here
	if full := h.ShortHelpView(bindings); lipgloss.Width(full) <= width {
		return full
	}
	ellipsis := " " + h.Styles.Ellipsis.Inline(true).Render(h.Ellipsis)
	for n := len(bindings) - 1; n > 0; n-- {
		if out := h.ShortHelpView(bindings[:n]) + ellipsis; lipgloss.Width(out) <= width {
			return out
		}
	}
	return ""
}

// ShortHelp is the focused screen's short help (help.KeyMap).
func (m *Model) ShortHelp() []key.Binding {
	if m.showHelp {
		k := m.c.keys
		if strings.Count(m.helpContent(m.width), "\n") > m.bodyHeight() {
			return []key.Binding{k.Help, k.Back, k.ScrollDown, k.ScrollUp, k.PageDown, k.Quit}
		}
		return []key.Binding{k.Help, k.Back, k.Quit}
	}
	return m.screen().ShortHelp()
}

// FullHelp is the focused screen's bindings plus the global ones (help.KeyMap).
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.keys
	groups := m.screen().FullHelp()
	shown := map[string]bool{}
	for _, g := range groups {
		for _, b := range g {
			shown[b.Help().Key] = true
		}
	}
	// The global bindings, less those the screen already lists (each key
	// appears once in the help).
	global := [][]key.Binding{{k.Details, k.Keys, k.Inspector, k.Request, k.Activity, k.NewKey}, {k.Help, k.HelpTyping, k.Back, k.Quit}}
	if m.active.modal() {
		global = [][]key.Binding{{k.Help, k.HelpTyping, k.Quit}}
	}
	for _, g := range global {
		var rest []key.Binding
		for _, b := range g {
			if !shown[b.Help().Key] {
				rest = append(rest, b)
			}
		}
		if len(rest) > 0 {
			groups = append(groups, rest)
		}
	}
	return groups
}

func (m *Model) screen() screen {
	if m.active == screenForm && m.unlock.isOpen() {
		return m.unlock // the new key's passphrase, asked before its request
	}
	switch m.active {
	case screenForm:
		return m.form
	case screenDetails:
		return m.details
	case screenKeys:
		return m.keyList
	case screenInspector:
		return m.inspector
	case screenSignin:
		return m.signin
	case screenRequest:
		return m.request
	case screenActivity:
		return m.activity
	default:
		return m.welcome
	}
}

func (m *Model) bodyHeight() int { return max(1, m.height-4) }

// setSize lays the screens out once per resize.
func (m *Model) setSize(w, h int) {
	m.width, m.height = max(w, 1), max(h, 1)
	m.c.width = m.width
	m.help.SetWidth(m.width)
	bh := m.bodyHeight()
	for _, s := range []screen{m.welcome, m.form, m.details, m.keyList, m.inspector, m.signin, m.request, m.activity} {
		s.SetSize(m.width, bh)
	}
	m.unlock.SetSize(m.width, bh)
}

// handleBackground rebuilds the styles for the terminal's background.
func (m *Model) handleBackground(dark bool) {
	t := m.cfg.theme
	if t.Plain || t.Dark == dark {
		return
	}
	t.Dark = dark
	m.cfg.theme = t
	*m.c.styles = *NewStyles(t)
	m.help.Styles = m.c.styles.Help
	m.spinner.Style = m.c.styles.Spinner
	m.foot.key = ""
	m.form.restyle()
	m.details.restyle()
	m.keyList.restyle()
	m.inspector.restyle()
	m.request.restyle()
	m.unlock.restyle()
}

// forward hands a message to the active screen and applies its intent.
func (m *Model) forward(msg tea.Msg) tea.Cmd {
	act, cmd := m.screen().Update(msg)
	return tea.Batch(cmd, m.apply(act))
}

// stampFiles are the files whose changes change b's Stamp (StampFiles of
// *store.Store and of the key service); nil: b's changes are polled.
func stampFiles(b Backend) []string {
	if w, ok := b.(interface{ StampFiles() []string }); ok {
		return w.StampFiles()
	}
	return nil
}
