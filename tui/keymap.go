package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the app, with its help text. Screens pick
// the bindings they honour; the help is built from the same values, so what
// the footer shows is what works.
type KeyMap struct {
	// Global (not while a text field has focus, except Quit on ctrl+c).
	// HelpTyping opens the help while a text field has focus, where ? is
	// text (a secret may hold one); it works everywhere.
	Help, HelpTyping, Quit, ForceQuit, Back key.Binding
	Details, Keys, Inspector, Request       key.Binding
	Activity                                key.Binding // the audit trail's hand-outs
	NewKey                                  key.Binding

	// Lists and forms. Choose changes the focused choice of a form (the
	// grant, a toggle); Advanced shows or hides the form's advanced
	// options; Registered goes on once a generated client key is
	// registered with the realm.
	Up, Down, Enter, NextField, PrevField, Submit, Choose key.Binding
	Advanced, Registered                                  key.Binding

	// Signing in (device code, browser): Copy takes the code (a browser
	// sign-in: the URL), CopyURL the URL; Cancel gives up waiting.
	CopyURL, OpenBrowser, Cancel key.Binding

	// Token details and API keys.
	Inspect, Refresh, AutoRefresh, Copy, CopyHeader, Reveal key.Binding
	Login, Logout, CheckServer                              key.Binding
	Filter, Delete, Rename, Sort, SetDefault, Yes, No       key.Binding

	// Inspector: JWKS verifies the tokens against a key set at a URL.
	Paste, JWKS key.Binding

	// Request: TabNext and TabPrev move between its fields (↑/↓ and enter
	// belong to the text areas); Send sends (again); Edit goes from the
	// answer back to the request. While the answer's filter is typed,
	// FilterKeep keeps it and FilterClear clears it.
	TabNext, TabPrev, Send, Edit key.Binding
	FilterKeep, FilterClear      key.Binding
	// Request's history: Recall (↑/↓ in the URL field) walks the key's
	// sent requests; Requests lists them with the saved ones; CopyCurl
	// copies a request as a shipkey curl command line.
	Recall, Requests, CopyCurl key.Binding
	// NextPage sends the request again for the answer's next page (its
	// Link: rel="next").
	NextPage key.Binding

	// Scrolling (every screen whose content can exceed the body).
	ScrollUp, ScrollDown, PageUp, PageDown, Top, Bottom key.Binding

	// Sorting the keys table by a column; again reverses.
	SortKey, SortLabel, SortUsed, SortAccess, SortRefresh key.Binding
}

// DefaultKeyMap is shipkey's key map.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		Help:       b([]string{"?"}, "?", "help"),
		HelpTyping: b([]string{"f1"}, "f1", "help"),
		Quit:       b([]string{"q", "ctrl+c"}, "q", "quit"),
		ForceQuit:  b([]string{"ctrl+c"}, "ctrl+c", "quit"),
		Back:       b([]string{"esc"}, "esc", "back"),
		Details:    b([]string{"1"}, "1", "token details"),
		Keys:       b([]string{"2"}, "2", "API keys"),
		Inspector:  b([]string{"3"}, "3", "inspector"),
		Request:    b([]string{"4"}, "4", "request"),
		Activity:   b([]string{"5"}, "5", "activity"),
		NewKey:     b([]string{"n"}, "n", "get API key"),

		Up:        b([]string{"up", "k"}, "↑/k", "up"),
		Down:      b([]string{"down", "j"}, "↓/j", "down"),
		Enter:     b([]string{"enter"}, "enter", "open"),
		NextField: b([]string{"tab", "down"}, "tab/↓", "next field"),
		PrevField: b([]string{"shift+tab", "up"}, "shift+tab/↑", "previous field"),
		Submit:    b([]string{"ctrl+s"}, "enter/ctrl+s", "submit"),
		Choose:    b([]string{"space", "left", "right"}, "space/←/→", "change"),
		Advanced:  b([]string{"ctrl+o"}, "ctrl+o", "advanced"),
		// Registered: enter, while the form shows a key to register.
		Registered: b([]string{"enter"}, "enter", "registered: go on"),

		CopyURL:     b([]string{"u"}, "u", "copy URL"),
		OpenBrowser: b([]string{"b"}, "b", "open in browser"),
		Cancel:      b([]string{"esc"}, "esc", "cancel"),

		Inspect:     b([]string{"i"}, "i", "inspect"),
		Refresh:     b([]string{"r"}, "r", "refresh"),
		AutoRefresh: b([]string{"a"}, "a", "auto-refresh"),
		Copy:        b([]string{"c"}, "c", "copy"),
		CopyHeader:  b([]string{"C"}, "C", "copy header"),
		Reveal:      b([]string{"v"}, "v", "reveal"),
		Login:       b([]string{"l", "enter"}, "l/enter", "log in again"),
		Logout:      b([]string{"X"}, "X", "log out"),
		CheckServer: b([]string{"s"}, "s", "check with server"),
		Filter:      b([]string{"/"}, "/", "filter"),
		Delete:      b([]string{"d"}, "d", "delete"),
		Rename:      b([]string{"e"}, "e", "rename"),
		Sort:        b([]string{"o"}, "o", "next sort column"),
		SetDefault:  b([]string{"*"}, "*", "default"),
		Yes:         b([]string{"y", "Y"}, "y", "yes"),
		No:          b([]string{"n", "N", "esc"}, "n", "no"),

		Paste:       b([]string{"p"}, "p", "paste a token"),
		JWKS:        b([]string{"w"}, "w", "JWKS URL"),
		TabNext:     b([]string{"tab"}, "tab", "next field"),
		TabPrev:     b([]string{"shift+tab"}, "shift+tab", "previous field"),
		Send:        b([]string{"ctrl+s"}, "ctrl+s", "send"),
		Edit:        b([]string{"esc"}, "esc", "edit request"),
		FilterKeep:  b([]string{"enter"}, "enter", "keep filter"),
		FilterClear: b([]string{"esc"}, "esc", "clear filter"),
		Recall:      b([]string{"up", "down"}, "↑/↓", "recall history"),
		Requests:    b([]string{"ctrl+r"}, "ctrl+r", "history & saved"),
		CopyCurl:    b([]string{"ctrl+y"}, "ctrl+y", "copy as shipkey curl"),
		NextPage:    b([]string{"ctrl+n"}, "ctrl+n", "next page"),
		ScrollUp:    b([]string{"up", "k"}, "↑/k", "scroll up"),
		ScrollDown:  b([]string{"down", "j"}, "↓/j", "scroll down"),
		PageUp:      b([]string{"pgup"}, "pgup", "page up"),
		PageDown:    b([]string{"pgdown"}, "pgdn", "page down"),
		Top:         b([]string{"g", "home"}, "g", "top"),
		Bottom:      b([]string{"G", "end"}, "G", "bottom"),

		SortKey:     b([]string{"K"}, "K", "sort by API key"),
		SortLabel:   b([]string{"L"}, "L", "sort by label"),
		SortUsed:    b([]string{"U"}, "U", "sort by last used"),
		SortAccess:  b([]string{"A"}, "A", "sort by access expiry"),
		SortRefresh: b([]string{"R"}, "R", "sort by refresh expiry"),
	}
}
