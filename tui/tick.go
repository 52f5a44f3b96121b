package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// The countdown tick fires at the whole second at which the active screen's
// text next changes (a "M:SS" countdown: every second; "3d 04h 12m" or
// "5 min ago": once a minute), found by rendering the screen for the coming
// seconds (nextChange). While the store is watched (cfg.changes) that is all
// it wakes for, at most maxTickGap apart; otherwise it also polls the
// store's stamp once a second, as before inotify.

// maxTickGap bounds the sleep of a watched screen whose text never changes.
const maxTickGap = 60

// ensureTick starts the countdown tick when the active screen shows
// countdowns and no tick is due within the next second; a tick scheduled
// further ahead (for the text of another state) is replaced.
func (m *Model) ensureTick() tea.Cmd {
	if !m.active.hasCountdowns() {
		return nil
	}
	next := nextSecond(m.cfg.now())
	if m.ticking && !m.tickAt.After(next) {
		return nil
	}
	return m.scheduleTick(next)
}

// scheduleTick arms the tick for at; an earlier tick still pending is
// dropped when it fires (its generation is old).
func (m *Model) scheduleTick(at time.Time) tea.Cmd {
	m.ticking = true
	m.tickGen++
	m.tickAt = at
	gen := m.tickGen
	return m.cfg.after(at.Sub(m.cfg.now()), func(t time.Time) tea.Msg { return tickMsg{gen: gen, at: t} })
}

// nextSecond is the first whole second of the wall clock after now.
func nextSecond(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }

// handleTick redraws countdowns (the clock was read at the top of Update;
// views format only what they show), checks the store's stamp when it is
// not watched, fires refresh-ahead, and schedules the next tick at the next
// change of the text shown; it lets the chain end when no screen with
// countdowns is shown.
func (m *Model) handleTick(msg tickMsg) tea.Cmd {
	if msg.gen != m.tickGen {
		return nil
	}
	m.ticking = false
	if !m.active.hasCountdowns() {
		return nil
	}
	var cmds []tea.Cmd
	if m.cfg.changes == nil && !m.req.pending(slotStamp) && !m.req.pending(slotKeys) {
		cmds = append(cmds, m.checkStamp()) // what other shipkey processes changed
	}
	m.retime(m.c.now)
	next := nextSecond(m.c.now)
	if m.active == screenDetails && m.details.wantsAutoRefresh(m.c.now) && !m.renew.inflight[m.details.key.Label] {
		cmds = append(cmds, m.apply(m.details.startAutoRefresh()))
	} else {
		// Nothing changes on this tick but the time: the frame rendered now
		// is the one View shows. Text that just changed (a seconds
		// countdown) is due again in a second; text that did not is
		// followed ahead, where the store is watched.
		text := m.render()
		if text == m.shown && m.cfg.changes != nil {
			next = m.nextChange(m.c.now, text, maxTickGap)
		}
		m.shown, m.reuse = text, true
	}
	cmds = append(cmds, m.scheduleTick(next))
	return tea.Batch(cmds...)
}

// retime brings the screens that keep time-dependent state up to now.
func (m *Model) retime(now time.Time) {
	switch m.active {
	case screenInspector:
		if !m.inspector.busy() {
			m.inspector.retime(now)
		}
	case screenSignin:
		m.signin.retime(now)
	}
}

// nextChange is the first whole second after now, at most gap seconds
// ahead, at which the app would show other text than shown (its text at
// now), or a timed action (auto-refresh, a code's expiry) is due. It
// renders the screen as of coming seconds, so no screen has to predict its
// own text. Text that a clock moves never comes back to what it was
// (countdowns, "ago", bars, "waiting… (Ns)"), so the first change is found
// by bisection: about 7 renders for a minute ahead.
func (m *Model) nextChange(now time.Time, shown string, gap int) time.Time {
	first := nextSecond(now)
	if m.active == screenInspector && !m.inspector.busy() {
		defer m.inspector.retime(now) // back at now after the probes
	}
	at := func(i int) time.Time { return first.Add(time.Duration(i) * time.Second) }
	changed := func(i int) bool { return m.renderAt(at(i)) != shown }
	last := gap - 1
	if !changed(last) && !m.timedActionBy(at(last)) {
		return at(last)
	}
	lo, hi := 0, last // the first change is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		if changed(mid) || m.timedActionBy(at(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return at(lo)
}

// renderAt is the app's text as it would read at t.
func (m *Model) renderAt(t time.Time) string {
	saved := m.c.now
	defer func() { m.c.now = saved }()
	m.c.now = t
	if m.active == screenInspector && !m.inspector.busy() {
		m.inspector.retime(t)
	}
	return m.render()
}

// timedActionBy reports whether something the tick does is due at or
// before t (auto-refresh, the end of a sign-in's wait).
func (m *Model) timedActionBy(t time.Time) bool {
	switch m.active {
	case screenDetails:
		return m.details.wantsAutoRefresh(t)
	case screenSignin:
		e := m.signin.prompt.ExpiresAt
		return m.signin.state != signinExpired && !e.IsZero() && !t.Before(e)
	}
	return false
}
