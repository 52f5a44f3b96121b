package tui

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/table"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/store"
)

// listMode is what the API keys screen is doing.
type listMode int

const (
	listBrowsing   listMode = iota
	listFiltering           // the filter field has focus
	listRenaming            // the inline rename field has focus
	listConfirming          // "delete …? (y/n)"
)

// sortOrder of the key table.
type sortOrder int

const (
	sortByLabel sortOrder = iota
	sortByLastUsed
)

// keyList is the API keys table.
type keyList struct {
	c             *common
	width, height int
	keys          []store.Key // all keys, as loaded
	visible       []store.Key // filtered and sorted, parallel to the table rows
	table         table.Model
	filter        textinput.Model
	rename        textinput.Model
	mode          listMode
	order         sortOrder
	target        string // the key being renamed or deleted
	errMsg        string
}

func newKeyList(c *common) *keyList {
	l := &keyList{c: c}
	km := table.DefaultKeyMap()
	l.table = table.New(table.WithFocused(true), table.WithStyles(c.styles.Table), table.WithKeyMap(km), table.WithWidth(80), table.WithHeight(10))
	l.filter = c.styles.newTextInput("/ ")
	l.filter.Placeholder = "filter labels"
	l.filter.CharLimit = 200
	l.rename = c.styles.newTextInput("")
	l.rename.CharLimit = 200
	l.layout()
	return l
}

func (l *keyList) restyle() {
	l.table.SetStyles(l.c.styles.Table)
	l.filter.SetStyles(l.c.styles.TextInput)
	l.rename.SetStyles(l.c.styles.TextInput)
}

func (l *keyList) SetSize(width, height int) {
	l.width, l.height = width, height
	l.layout()
}

// layout sizes the table and its columns from the screen size.
func (l *keyList) layout() {
	w := max(l.width, 20)
	l.table.SetWidth(w)
	l.table.SetHeight(max(3, l.height-4))
	l.filter.SetWidth(min(40, max(10, w-6)))
	l.rename.SetWidth(min(40, max(10, w-24)))
	// Cell padding takes 2 per column.
	avail := w - 8
	keyW, usedW, expW := 17, 12, 14
	labelW := avail - keyW - usedW - expW
	if labelW < 10 {
		keyW = max(0, keyW-(10-labelW))
		labelW = avail - keyW - usedW - expW
	}
	l.table.SetColumns([]table.Column{
		{Title: "API Key", Width: keyW},
		{Title: "Label", Width: max(labelW, 6)},
		{Title: "Last Used", Width: usedW},
		{Title: "Access expires", Width: expW},
	})
	l.refreshRows()
}

// setKeys replaces the keys, keeping the selection on the same label.
func (l *keyList) setKeys(keys []store.Key) {
	sel := l.selected()
	l.keys = keys
	l.refreshRows()
	for i, k := range l.visible {
		if sel != nil && k.Label == sel.Label {
			l.table.SetCursor(i)
		}
	}
}

// selected returns the key under the cursor, or nil.
func (l *keyList) selected() *store.Key {
	i := l.table.Cursor()
	if i < 0 || i >= len(l.visible) {
		return nil
	}
	k := l.visible[i]
	return &k
}

// refreshRows recomputes the visible rows (filter, sort, the clock). The
// cursor stays on the key it was on while that key is visible: clearing a
// filter or changing the sort never moves it to another key.
func (l *keyList) refreshRows() {
	var was string
	if sel := l.selected(); sel != nil {
		was = sel.Label
	}
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	l.visible = l.visible[:0]
	for _, k := range l.keys {
		if q == "" || matches(strings.ToLower(k.Label), q) {
			l.visible = append(l.visible, k)
		}
	}
	switch l.order {
	case sortByLastUsed:
		sort.SliceStable(l.visible, func(i, j int) bool { return l.visible[i].LastUsed.After(l.visible[j].LastUsed) })
	default:
		sort.SliceStable(l.visible, func(i, j int) bool { return l.visible[i].Label < l.visible[j].Label })
	}
	rows := make([]table.Row, len(l.visible))
	now := l.c.now
	for i, k := range l.visible {
		label := text.Safe(k.Label)
		if k.Default {
			label = "* " + label
		}
		masked := k.Masked
		if masked == "" {
			masked = "—"
		}
		rows[i] = table.Row{text.Safe(masked), label, text.Ago(k.LastUsed, now), accessExpires(k, now)}
	}
	l.table.SetRows(rows)
	if i := slices.IndexFunc(l.visible, func(k store.Key) bool { return k.Label == was }); was != "" && i >= 0 {
		l.table.SetCursor(i)
	} else if c := l.table.Cursor(); c < 0 || c >= len(rows) {
		l.table.SetCursor(max(0, min(c, len(rows)-1)))
	}
}

// accessExpires is the "Access expires" cell.
func accessExpires(k store.Key, now time.Time) string {
	if k.LoggedOut || k.Token.ObtainedAt.IsZero() {
		return "no token"
	}
	exp := k.Token.AccessExpiry()
	if exp.IsZero() {
		return "no stated expiry"
	}
	if !exp.After(now) {
		return "expired"
	}
	return "in " + text.Countdown(exp.Sub(now))
}

// matches is a substring match, else a fuzzy (in-order subsequence) match.
func matches(s, q string) bool {
	if strings.Contains(s, q) {
		return true
	}
	r := []rune(q)
	i := 0
	for _, c := range s {
		if i < len(r) && c == r[i] {
			i++
		}
	}
	return i == len(r)
}

// Capturing: the filter and rename fields take printable keys; the delete
// confirmation is modal (only y/n/esc, and ctrl+c, act).
func (l *keyList) Capturing() bool { return l.mode != listBrowsing }

func (l *keyList) Update(msg tea.Msg) (action, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.MouseWheelMsg:
		if msg.Button == tea.MouseWheelUp {
			l.table.MoveUp(1)
		} else if msg.Button == tea.MouseWheelDown {
			l.table.MoveDown(1)
		}
		return nil, nil
	case tea.KeyPressMsg:
		switch l.mode {
		case listFiltering:
			return l.handleFilterKey(msg)
		case listRenaming:
			return l.handleRenameKey(msg)
		case listConfirming:
			return l.handleConfirmKey(msg)
		}
		return l.handleKey(msg)
	}
	return nil, nil
}

func (l *keyList) handleKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := l.c.keys
	l.errMsg = ""
	sel := l.selected()
	switch {
	case key.Matches(k, km.Back):
		if l.filter.Value() != "" {
			l.filter.SetValue("")
			l.refreshRows()
			return nil, nil
		}
		return actBack{}, nil
	case key.Matches(k, km.Filter):
		l.mode = listFiltering
		return nil, l.filter.Focus()
	case key.Matches(k, km.Sort):
		l.order = 1 - l.order
		l.refreshRows()
		return nil, nil
	}
	if sel == nil {
		var cmd tea.Cmd
		l.table, cmd = l.table.Update(k)
		return nil, cmd
	}
	switch {
	case key.Matches(k, km.Enter):
		return actOpenDetails{label: sel.Label}, nil
	case key.Matches(k, km.Copy):
		return actCopy{label: sel.Label}, nil
	case key.Matches(k, km.CopyHeader):
		return actCopy{label: sel.Label, header: true}, nil
	case key.Matches(k, km.Inspect):
		return actInspectKey{label: sel.Label}, nil
	case key.Matches(k, km.SetDefault):
		return actSetDefault{label: sel.Label}, nil
	case key.Matches(k, km.Delete):
		l.mode, l.target = listConfirming, sel.Label
		return nil, nil
	case key.Matches(k, km.Rename):
		l.mode, l.target = listRenaming, sel.Label
		l.rename.SetValue(sel.Label)
		l.rename.CursorEnd()
		return nil, l.rename.Focus()
	}
	var cmd tea.Cmd
	l.table, cmd = l.table.Update(k)
	return nil, cmd
}

func (l *keyList) handleFilterKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Back):
		l.filter.SetValue("")
		l.filter.Blur()
		l.mode = listBrowsing
		l.refreshRows()
		return nil, nil
	case key.Matches(k, km.Enter), k.String() == "tab", k.String() == "shift+tab":
		l.filter.Blur()
		l.mode = listBrowsing
		return nil, nil
	}
	var cmd tea.Cmd
	l.filter, cmd = l.filter.Update(k)
	l.refreshRows()
	return nil, cmd
}

func (l *keyList) handleRenameKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Back):
		l.mode, l.errMsg = listBrowsing, ""
		l.rename.Blur()
		return nil, nil
	case key.Matches(k, km.Enter):
		nl := strings.TrimSpace(l.rename.Value())
		switch {
		case nl == "":
			l.errMsg = "the label is required"
			return nil, nil
		case text.Safe(nl) != nl:
			l.errMsg = "the label must not contain control characters"
			return nil, nil
		case nl == l.target:
			l.mode = listBrowsing
			l.rename.Blur()
			return nil, nil
		}
		for _, other := range l.keys {
			if other.Label == nl {
				l.errMsg = "a key with this label exists; pick another"
				return nil, nil
			}
		}
		l.mode, l.errMsg = listBrowsing, ""
		l.rename.Blur()
		return actRename{label: l.target, newLabel: nl}, nil
	}
	var cmd tea.Cmd
	l.rename, cmd = l.rename.Update(k)
	return nil, cmd
}

func (l *keyList) handleConfirmKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Yes):
		l.mode = listBrowsing
		return actDelete{label: l.target}, nil
	case key.Matches(k, km.No):
		l.mode = listBrowsing
	}
	return nil, nil
}

func (l *keyList) View() string {
	s := l.c.styles
	var b strings.Builder
	orderName := "label"
	if l.order == sortByLastUsed {
		orderName = "last used"
	}
	top := s.Subtle.Render("  " + strconv.Itoa(len(l.visible)) + " of " + plural(len(l.keys), "key") + " · sorted by " + orderName)
	if l.mode == listFiltering || l.filter.Value() != "" {
		top += "   " + l.filter.View()
	}
	b.WriteString(top + "\n")
	if len(l.keys) == 0 {
		b.WriteString("\n  " + s.Subtle.Render("No API keys yet: press n to get one.") + "\n")
		return fitBlock(b.String(), l.width, l.height)
	}
	b.WriteString(l.table.View() + "\n")
	switch l.mode {
	case listConfirming:
		b.WriteString("  " + s.Warn.Render("Delete key \""+text.Safe(l.target)+"\" and its secrets? (y/n)") + "\n")
	case listRenaming:
		b.WriteString("  " + s.row("New label", 12, l.rename.View()) + s.Subtle.Render("  enter saves · esc cancels") + "\n")
	default:
		b.WriteString("\n")
	}
	if l.errMsg != "" {
		b.WriteString("  " + s.Error.Render("✗ "+l.errMsg) + "\n")
	}
	return fitBlock(b.String(), l.width, l.height)
}

func (l *keyList) ShortHelp() []key.Binding {
	k := l.c.keys
	switch l.mode {
	case listFiltering:
		return []key.Binding{k.Enter, k.Back, k.ForceQuit}
	case listRenaming:
		return []key.Binding{k.Enter, k.Back, k.ForceQuit}
	case listConfirming:
		return []key.Binding{k.Yes, k.No}
	}
	return []key.Binding{k.Enter, k.Filter, k.Sort, k.Copy, k.Rename, k.Delete, k.SetDefault, k.NewKey, k.Back, k.Help}
}

func (l *keyList) FullHelp() [][]key.Binding {
	k := l.c.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.Enter, k.Filter, k.Sort},
		{k.Copy, k.CopyHeader, k.Inspect},
		{k.Rename, k.Delete, k.SetDefault, k.NewKey},
	}
}

// plural is "1 key", "3 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
