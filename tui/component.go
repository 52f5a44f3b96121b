package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// common is what every screen shares with the root: styles, keys, and the
// clock reading of the current Update. Screens read it; only the root writes.
type common struct {
	styles *Styles
	keys   KeyMap
	now    time.Time // the clock as of the message being handled
	width  int       // the terminal width
}

// screen is the one contract every screen follows. Update returns the intent
// (an action, nil for none) for the root to apply, plus commands that only
// concern the screen's own widgets. View renders exactly the body rectangle
// given by the last SetSize. Capturing reports whether a text field has focus:
// then printable keys are text and the root's global keys stand aside.
type screen interface {
	Update(msg tea.Msg) (action, tea.Cmd)
	View() string
	SetSize(width, height int)
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	Capturing() bool
}

// screenID names the screens.
type screenID int

const (
	screenWelcome screenID = iota
	screenForm
	screenDetails
	screenKeys
	screenInspector
	screenSignin
	screenRequest
	screenActivity
)

func (s screenID) String() string {
	return [...]string{"Welcome", "Get API Key", "Token details", "API keys", "Claims inspector", "Sign in", "Request", "Activity"}[s]
}

// modal reports whether the screen holds the app until it is done: the
// sign-in screen waits for a person, and only esc (cancel) or quit leave
// it; the keys that open other screens stand aside.
func (s screenID) modal() bool { return s == screenSignin }

// hasCountdowns reports whether the screen shows live countdowns or
// relative times (and so needs the countdown tick).
func (s screenID) hasCountdowns() bool {
	return s != screenForm && s != screenRequest
}
