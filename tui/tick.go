package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// ensureTick starts the once-a-second countdown tick when the active screen
// shows countdowns and no tick is pending.
func (m *Model) ensureTick() tea.Cmd {
	if m.ticking || !m.active.hasCountdowns() {
		return nil
	}
	m.ticking = true
	m.tickGen++
	return m.tickCmd()
}

// tickCmd waits for the next whole second of the wall clock.
func (m *Model) tickCmd() tea.Cmd {
	gen := m.tickGen
	now := m.cfg.now()
	d := time.Second - time.Duration(now.Nanosecond())
	return m.cfg.after(d, func(t time.Time) tea.Msg { return tickMsg{gen: gen, at: t} })
}

// handleTick redraws countdowns (the clock was read at the top of Update;
// views format only what they show), checks the store's stamp, fires
// refresh-ahead, and schedules the next tick; it lets the chain end when no
// screen with countdowns is shown.
func (m *Model) handleTick(msg tickMsg) tea.Cmd {
	if msg.gen != m.tickGen {
		return nil
	}
	if !m.active.hasCountdowns() {
		m.ticking = false
		return nil
	}
	var cmds []tea.Cmd
	if !m.req.pending(slotStamp) && !m.req.pending(slotKeys) {
		cmds = append(cmds, m.checkStamp()) // what other shipkey processes changed
	}
	switch m.active {
	case screenInspector:
		if !m.inspector.busy() {
			m.inspector.retime(m.c.now)
		}
	case screenSignin:
		m.signin.retime(m.c.now)
	case screenDetails:
		if m.details.wantsAutoRefresh(m.c.now) {
			cmds = append(cmds, m.apply(m.details.startAutoRefresh()))
		}
	}
	cmds = append(cmds, m.tickCmd())
	return tea.Batch(cmds...)
}
