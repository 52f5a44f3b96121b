package tui

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/shipkey/shipkey/auth"
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

// keyList is the API keys table. Its cost follows what it shows, not how
// many keys there are: rows are prepared once per key-list load (keyIndex),
// sorted once per load or change of sort, filtered over that index (only
// the rows that matched the shorter query when the query grows), and only
// the rows in sight are formatted, by View. The 1 s tick changes nothing
// here: View redraws the clock cells of the visible rows.
type keyList struct {
	c             *common
	width, height int
	keys          *keyIndex // all keys, as loaded (shared with the other screens)
	sorted        []int32   // indexes of keys' rows, in sort order
	visible       []int32   // the sorted indexes that match the filter
	query         string    // the filter the visible rows match (lower-cased)
	cursor        int       // index into visible
	offset        int       // the first visible row in sight
	cols          []int     // the columns shown (indexes into KeyColumns)
	widths        []int     // their widths
	sortCol       int
	desc          bool
	filter        textinput.Model
	rename        textinput.Model
	mode          listMode
	target        string // the key being renamed or deleted
	targetTeam    string // its team ("" for a key of this machine)
	errMsg        string
	// renewFailed: the keys whose background renewal failed (the root's,
	// renew.go); their Access cell says so while the deadline is the same.
	renewFailed map[string]renewFailure
}

func newKeyList(c *common) *keyList {
	l := &keyList{c: c, sortCol: ColLabel}
	l.filter = c.styles.newTextInput("/ ")
	l.filter.Placeholder = "filter label, API key, grant"
	l.filter.CharLimit = 200
	l.rename = c.styles.newTextInput("")
	l.rename.CharLimit = 200
	l.layout()
	return l
}

func (l *keyList) restyle() {
	l.filter.SetStyles(l.c.styles.TextInput)
	l.rename.SetStyles(l.c.styles.TextInput)
}

func (l *keyList) SetSize(width, height int) {
	l.width, l.height = width, height
	l.layout()
}

// layout picks the columns that fit and their widths (1 cell of padding
// each side), once per resize.
func (l *keyList) layout() {
	w := max(l.width, 20)
	l.filter.SetWidth(min(40, max(10, w-6)))
	l.rename.SetWidth(min(40, max(10, w-24)))
	// The label wants minLabel cells and gets at least labelFloor: the other
	// columns shrink toward their MinWidth first (the one with the most to
	// give, a cell at a time); only when that is not enough is a column
	// dropped (the optional one first, then from the right).
	// It takes at most maxLabel cells: on a wide screen the spare width stays
	// at the right, not between a label and its dates.
	const minLabel, labelFloor, maxLabel = 12, 8, 40
	cols := []int{ColAPIKey, ColLastUsed, ColAccess, ColRefresh}
	// The Grant column shows only where every column fits at full width
	// beside it with a label of minLabel cells: it never squeezes the others.
	full := 2 + minLabel + KeyColumns[ColGrant].Width + 2
	for _, c := range cols {
		full += KeyColumns[c].Width + 2
	}
	if full <= w {
		cols = slices.Insert(cols, 1, ColGrant)
	}
	var widths []int
	labelW := func() int {
		n := w - 2 // the label's padding
		for _, cw := range widths {
			n -= cw + 2
		}
		return n
	}
	for {
		widths = widths[:0]
		for _, c := range cols {
			widths = append(widths, KeyColumns[c].Width)
		}
		for labelW() < minLabel {
			most := -1
			for i, c := range cols {
				if slack := widths[i] - KeyColumns[c].MinWidth; slack > 0 && (most < 0 || slack > widths[most]-KeyColumns[cols[most]].MinWidth) {
					most = i
				}
			}
			if most < 0 {
				break
			}
			widths[most]--
		}
		if labelW() >= labelFloor || len(cols) == 1 {
			break
		}
		if i := slices.IndexFunc(cols, func(c int) bool { return KeyColumns[c].optional }); i >= 0 {
			cols = slices.Delete(cols, i, i+1)
		} else {
			cols = cols[:len(cols)-1]
		}
	}
	l.cols = append([]int{cols[0], ColLabel}, cols[1:]...)
	l.widths = append(append(l.widths[:0], widths[0], max(4, min(maxLabel, labelW()))), widths[1:]...)
	l.scrollToCursor()
}

// tableHeight is the rows in sight: the body less the title and header
// lines and the lines under the table (a question, the rename field, an
// error) while there are any. No row is left empty for them otherwise.
func (l *keyList) tableHeight() int { return max(1, l.height-2-l.linesUnder()) }

// linesUnder is how many lines View writes under the table.
func (l *keyList) linesUnder() int {
	n := 0
	if l.mode == listConfirming || l.mode == listRenaming {
		n++
	}
	if l.errMsg != "" {
		n++
	}
	return n
}

// setKeys takes a fresh key list (once per load), keeping the cursor on
// the same key.
func (l *keyList) setKeys(keys *keyIndex) {
	sel := l.selectedID()
	l.keys = keys
	l.sort()
	l.applyFilter(true)
	l.selectWhere(func(r *KeyRow) bool { return r.id == sel })
}

// setRows takes a key list in which only rows changed (another process
// used or renewed those keys: keyIndex.with), keeping the cursor on the
// same key: the changed rows move to their place in the sort order, the
// others stay sorted, so that a change costs a few binary searches and
// copies, not a sort of every key.
func (l *keyList) setRows(keys *keyIndex, rows []int32) {
	sel := l.selectedID()
	l.keys = keys
	changed := make(map[int32]bool, len(rows))
	for _, r := range rows {
		changed[r] = true
	}
	// A new slice: visible may be the old one, never changed in place.
	sorted := make([]int32, 0, len(l.sorted))
	for _, i := range l.sorted {
		if !changed[i] {
			sorted = append(sorted, i)
		}
	}
	for r := range changed {
		at, _ := slices.BinarySearchFunc(sorted, r, l.compare)
		sorted = slices.Insert(sorted, at, r)
	}
	l.sorted = sorted
	l.applyFilter(true)
	l.selectWhere(func(r *KeyRow) bool { return r.id == sel })
}

// sort orders the index by the sort column (once per load or change of
// sort).
func (l *keyList) sort() {
	l.sorted = make([]int32, l.keys.len()) // visible may be this slice: never changed in place
	for i := range l.sorted {
		l.sorted[i] = int32(i)
	}
	slices.SortStableFunc(l.sorted, l.compare)
}

// compare orders rows i and j by the sort column; the label, then the id,
// break ties.
func (l *keyList) compare(i, j int32) int {
	a, b := l.keys.row(i), l.keys.row(j)
	c := KeyColumns[l.sortCol].compare(a, b)
	if l.desc {
		c = -c
	}
	if c == 0 {
		c = KeyColumns[ColLabel].compare(a, b)
	}
	if c == 0 {
		c = strings.Compare(a.id, b.id)
	}
	return c
}

// applyFilter recomputes the visible rows for the filter field's query. A
// query that extends the last one narrows the last result (a match of the
// longer query always matches the shorter); all: start from every row.
func (l *keyList) applyFilter(all bool) {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	from := l.sorted
	if !all && l.query != "" && strings.HasPrefix(q, l.query) {
		from = l.visible
	}
	var out []int32
	if q == "" {
		out = l.sorted // shared: neither is changed in place
	} else {
		out = make([]int32, 0, len(from))
		for _, i := range from {
			if l.keys.row(i).matches(q) {
				out = append(out, i)
			}
		}
	}
	l.visible, l.query = out, q
	l.cursor = max(0, min(l.cursor, len(l.visible)-1))
	l.scrollToCursor()
}

// refilter applies a changed filter, keeping the cursor on its key while
// that key is visible.
func (l *keyList) refilter(all bool) {
	sel := l.selectedID()
	l.applyFilter(all)
	l.selectWhere(func(r *KeyRow) bool { return r.id == sel })
}

// selectWhere moves the cursor to the first visible row where f holds.
func (l *keyList) selectWhere(f func(*KeyRow) bool) bool {
	for n, i := range l.visible {
		if f(l.keys.row(i)) {
			l.cursor = n
			l.scrollToCursor()
			return true
		}
	}
	return false
}

// selectLabel puts the cursor on the key labelled label, when visible.
func (l *keyList) selectLabel(label string) {
	if label != "" {
		l.selectWhere(func(r *KeyRow) bool { return r.label == label })
	}
}

// scrollToCursor keeps the cursor's row in sight.
func (l *keyList) scrollToCursor() {
	h := l.tableHeight()
	switch {
	case l.cursor < l.offset:
		l.offset = l.cursor
	case l.cursor >= l.offset+h:
		l.offset = l.cursor - h + 1
	}
	l.offset = max(0, min(l.offset, len(l.visible)-h))
}

func (l *keyList) moveTo(n int) {
	l.cursor = max(0, min(n, len(l.visible)-1))
	l.scrollToCursor()
}

// selected returns the row of the key under the cursor, or nil.
func (l *keyList) selected() *KeyRow {
	if l.cursor < 0 || l.cursor >= len(l.visible) {
		return nil
	}
	return l.keys.row(l.visible[l.cursor])
}

func (l *keyList) selectedID() string {
	if r := l.selected(); r != nil {
		return r.id
	}
	return ""
}

// sortBy sorts by column c; again on the same column reverses.
func (l *keyList) sortBy(c int) {
	if l.sortCol == c {
		l.desc = !l.desc
	} else {
		l.sortCol, l.desc = c, false
	}
	sel := l.selectedID()
	l.sort()
	l.applyFilter(true)
	l.selectWhere(func(r *KeyRow) bool { return r.id == sel })
}

// matches is a substring match, else a fuzzy (in-order subsequence) match;
// both lower-cased already.
func matches(s, q string) bool {
	if strings.Contains(s, q) {
		return true
	}
	i := 0
	for j := 0; j < len(s) && i < len(q); j++ {
		if s[j] == q[i] {
			i++
		}
	}
	return i == len(q)
}

// Capturing: the filter and rename fields take printable keys; the delete
// confirmation is modal (only y/n/esc, and ctrl+c, act).
func (l *keyList) Capturing() bool { return l.mode != listBrowsing }

func (l *keyList) Update(msg tea.Msg) (action, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.MouseWheelMsg:
		if l.mode == listBrowsing || l.mode == listFiltering {
			switch msg.Button {
			case tea.MouseWheelUp:
				l.moveTo(l.cursor - 1)
			case tea.MouseWheelDown:
				l.moveTo(l.cursor + 1)
			}
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

// move handles the cursor keys; it reports whether k was one.
func (l *keyList) move(k tea.KeyPressMsg) bool {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Up):
		l.moveTo(l.cursor - 1)
	case key.Matches(k, km.Down):
		l.moveTo(l.cursor + 1)
	case key.Matches(k, km.PageUp):
		l.moveTo(l.cursor - l.tableHeight())
	case key.Matches(k, km.PageDown):
		l.moveTo(l.cursor + l.tableHeight())
	case key.Matches(k, km.Top):
		l.moveTo(0)
	case key.Matches(k, km.Bottom):
		l.moveTo(len(l.visible) - 1)
	default:
		return false
	}
	return true
}

// handleKey handles a key while browsing: the keys that act on the list
// (listKey), then those that act on the selected key (rowKey).
func (l *keyList) handleKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	l.errMsg = ""
	if act, cmd, done := l.listKey(k); done {
		return act, cmd
	}
	if sel := l.selected(); sel != nil {
		return l.rowKey(k, sel)
	}
	return nil, nil
}

// listKey handles the keys that act on the list: back (which clears the
// filter first), filter, sort, the cursor. done is false for any other key.
func (l *keyList) listKey(k tea.KeyPressMsg) (act action, cmd tea.Cmd, done bool) {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Back):
		if l.filter.Value() != "" {
			l.filter.SetValue("")
			l.refilter(true)
			return nil, nil, true
		}
		return actBack{}, nil, true
	case key.Matches(k, km.Filter):
		l.mode = listFiltering
		return nil, l.filter.Focus(), true
	case key.Matches(k, km.Sort):
		l.sortBy((l.sortCol + 1) % len(KeyColumns))
		return nil, nil, true
	}
	return nil, nil, l.move(k) || l.sortKey(k)
}

// sortKey sorts by the column whose key k is; it reports whether k was one.
func (l *keyList) sortKey(k tea.KeyPressMsg) bool {
	km := l.c.keys
	for c, b := range []key.Binding{ColAPIKey: km.SortKey, ColLabel: km.SortLabel, ColLastUsed: km.SortUsed, ColAccess: km.SortAccess, ColRefresh: km.SortRefresh} {
		if key.Matches(k, b) {
			l.sortBy(c)
			return true
		}
	}
	return false
}

// rowKey handles the keys that act on the selected key: open, copy,
// inspect, set default, and ask to delete or rename it.
func (l *keyList) rowKey(k tea.KeyPressMsg, sel *KeyRow) (action, tea.Cmd) {
	km := l.c.keys
	label := sel.label
	switch {
	case key.Matches(k, km.Enter):
		return actOpenDetails{label: label}, nil
	case key.Matches(k, km.Copy):
		return actCopy{label: label}, nil
	case key.Matches(k, km.CopyHeader):
		return actCopy{label: label, header: true}, nil
	case key.Matches(k, km.Inspect):
		return actInspectKey{label: label}, nil
	case key.Matches(k, km.SetDefault):
		return actSetDefault{label: label}, nil
	case key.Matches(k, km.Delete):
		l.mode, l.target, l.targetTeam = listConfirming, label, sel.Team()
		return nil, nil
	case key.Matches(k, km.Rename):
		l.mode, l.target = listRenaming, label
		l.rename.SetValue(label)
		l.rename.CursorEnd()
		return nil, l.rename.Focus()
	}
	return nil, nil
}

func (l *keyList) handleFilterKey(k tea.KeyPressMsg) (action, tea.Cmd) {
	km := l.c.keys
	switch {
	case key.Matches(k, km.Back):
		l.filter.SetValue("")
		l.filter.Blur()
		l.mode = listBrowsing
		l.refilter(true)
		return nil, nil
	case key.Matches(k, km.Enter), k.String() == "tab", k.String() == "shift+tab":
		l.filter.Blur()
		l.mode = listBrowsing
		return nil, nil
	case k.String() == "up" || k.String() == "down":
		l.move(k)
		return nil, nil
	}
	var cmd tea.Cmd
	l.filter, cmd = l.filter.Update(k)
	if strings.ToLower(strings.TrimSpace(l.filter.Value())) != l.query {
		l.refilter(false)
	}
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
		case !text.IsClean(nl):
			l.errMsg = "the label must not contain control characters"
			return nil, nil
		case nl == l.target:
			l.mode = listBrowsing
			l.rename.Blur()
			return nil, nil
		}
		if _, taken := l.keys.find(nl); taken {
			l.errMsg = "a key with this label exists; pick another"
			return nil, nil
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

// outcome applies the answer of a delete, rename or set default started
// here: the toast to show, or false with the error under the table.
func (l *keyList) outcome(msg opDoneMsg) (text.Clean, bool) {
	lbl := text.Sanitize(msg.label)
	if msg.err != nil {
		l.errMsg = msg.op.String() + " failed: " + errText(msg.err)
		if msg.op == opRename && errors.Is(msg.err, store.ErrLabelTaken) {
			l.errMsg = "a key with this label exists; pick another"
		}
		return text.Clean{}, false
	}
	switch msg.op {
	case opDelete:
		return deleteOutcome(lbl, l.wasLoggedOut(msg.label), msg.end), true
	case opRename:
		return text.Cleanf("Renamed to \"%s\".", msg.to), true
	default:
		return text.Cleanf("\"%s\" is now the default key.", lbl), true
	}
}

// wasLoggedOut reports whether the listed key labelled label had no
// session (logged out, its end not pending).
func (l *keyList) wasLoggedOut(label string) bool {
	r, ok := l.keys.find(label)
	return ok && r.wasLoggedOut()
}

// deleteOutcome says what a delete did, here and at the server, as `keys
// rm` does.
func deleteOutcome(lbl text.Clean, loggedOut bool, res auth.EndResult) text.Clean {
	switch {
	case loggedOut:
		return text.Cleanf("Deleted \"%s\" (it had no session to end).", lbl)
	case res.AlreadyEnded:
		return text.Cleanf("Deleted \"%s\"; the server said its session had already ended.", lbl)
	case res.Ended():
		return text.Cleanf("Deleted \"%s\" and ended its session at the server (%s).", lbl, res.Via)
	default:
		return text.Cleanf("Deleted \"%s\"; the server offers no way to end its session: its tokens stay valid until they expire.", lbl)
	}
}

func (l *keyList) View() string {
	s := l.c.styles
	var b strings.Builder
	col := KeyColumns[l.sortCol]
	dir := "▲"
	if l.desc {
		dir = "▼"
	}
	top := s.Subtle.Render("  " + strconv.Itoa(len(l.visible)) + " of " + plural(l.keys.len(), "key") + " · sorted by " + strings.ToLower(col.Title) + " " + dir)
	if l.mode == listFiltering || l.filter.Value() != "" {
		top += "   " + l.filter.View()
	}
	b.WriteString(top + "\n")
	if l.keys.len() == 0 {
		b.WriteString("\n  " + s.Subtle.Render("No API keys yet: press n to get one.") + "\n")
		return fitBlock(b.String(), l.width, l.height)
	}
	b.WriteString(l.tableView() + "\n")
	switch l.mode {
	case listConfirming:
		b.WriteString("  " + s.Warn.Render(l.confirmText()) + "\n")
	case listRenaming:
		b.WriteString("  " + s.row("New label", 12, l.rename.View()) + s.Subtle.Render("  enter saves · esc cancels") + "\n")
	}
	if l.errMsg != "" {
		b.WriteString("  " + s.Error.Render("✗ "+l.errMsg) + "\n")
	}
	return fitBlock(b.String(), l.width, l.height)
}

// tableView draws the header and the rows in sight: the only rows whose
// cells are formatted.
func (l *keyList) tableView() string {
	s := l.c.styles
	var b strings.Builder
	b.WriteString(l.headerView())
	// The lines under the table (a question, an error) may have taken a row
	// since the last scroll: keep the cursor in sight without changing state.
	h, off := l.tableHeight(), l.offset
	if l.cursor >= off+h {
		off = l.cursor - h + 1
	}
	end := min(len(l.visible), off+h)
	rows := make([]string, 0, h)
	var line strings.Builder
	for n := off; n < end; n++ {
		rows = append(rows, l.rowView(n, &line))
	}
	rows = markMore(rows, l.width, off > 0, end < len(l.visible), s.Subtle)
	if len(rows) == 0 && l.query != "" && h > 0 {
		rows = append(rows, "  "+s.Subtle.Render(ansi.Truncate(text.Cleanf("No key matches \"%s\" (label, API key or grant) · esc clears the filter", l.query).String(), max(0, l.width-2), "…")))
		end++
	}
	for _, r := range rows {
		b.WriteString("\n" + r)
	}
	for n := end; n < off+h; n++ {
		b.WriteString("\n")
	}
	return b.String()
}

// tableCell is one cell of the table: txt cut to w cells, padded, with a
// space each side.
func tableCell(txt string, w int) string {
	if ansi.StringWidth(txt) > w {
		txt = ansi.Truncate(txt, w, "…")
	}
	return " " + txt + strings.Repeat(" ", max(0, w-ansi.StringWidth(txt))) + " "
}

// headerView is the table's header: the columns' titles (short where the
// long one does not fit), the sort column's with its arrow.
func (l *keyList) headerView() string {
	var head strings.Builder
	for i, c := range l.cols {
		head.WriteString(tableCell(l.columnTitle(c, l.widths[i]), l.widths[i]))
	}
	return l.c.styles.Table.Header.UnsetPadding().Render(head.String())
}

// columnTitle is column c's title in w cells.
func (l *keyList) columnTitle(c, w int) string {
	title := KeyColumns[c].Title
	arrowW := 0
	if c == l.sortCol {
		arrowW = 2
	}
	if KeyColumns[c].Short != "" && ansi.StringWidth(title)+arrowW > w {
		title = KeyColumns[c].Short
	}
	if c != l.sortCol {
		return title
	}
	// The arrow always shows: the title gives way.
	arrow := " ▲"
	if l.desc {
		arrow = " ▼"
	}
	return ansi.Truncate(title, max(0, w-2), "") + arrow
}

// rowView is the row of visible key n, its cells formatted in line (a
// buffer the rows share), selected when the cursor is on it.
func (l *keyList) rowView(n int, line *strings.Builder) string {
	s := l.c.styles
	r := l.keys.row(l.visible[n])
	line.Reset()
	for i, c := range l.cols {
		txt := KeyColumns[c].Cell(r, l.c.now, Live)
		if f, ok := l.renewFailed[r.id]; ok && c == ColAccess && f.deadline == rowDeadline(r) {
			txt = "renewal failed" // the status line said why
		}
		line.WriteString(tableCell(txt, l.widths[i]))
	}
	st := s.Table.Cell.UnsetPadding()
	if n == l.cursor {
		st = s.Table.Selected
	}
	return st.Render(line.String())
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
		{k.Up, k.Down, k.PageDown, k.Top, k.Bottom, k.Enter, k.Filter},
		{k.Sort, k.SortKey, k.SortLabel, k.SortUsed, k.SortAccess, k.SortRefresh},
		{k.Copy, k.CopyHeader, k.Inspect, k.Rename, k.Delete, k.SetDefault, k.NewKey},
	}
}

// plural is "1 key", "3 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// confirmText asks before a delete: a team key goes for every member of its
// team.
func (l *keyList) confirmText() string {
	if l.targetTeam != "" {
		return text.Cleanf("Delete team key \"%s\" for every member of %s? (y/n)", l.target, l.targetTeam).String()
	}
	return text.Cleanf("Delete key \"%s\" and its secrets? (y/n)", l.target).String()
}
