package text

import (
	"fmt"
	"strconv"
	"time"
)

const day = 24 * time.Hour

// Relative humanizes the time from now to t: "in 14d 23h", "in 12m 30s",
// "3m ago", "now".
//
// The forms are stable (golden files depend on them): the magnitude is
// truncated to whole seconds and shown as its largest unit among d, h, m, s,
// followed by the next unit when that is not zero ("in 14d 23h", "in 2h 5m",
// "in 45s", "3m ago", "2d 4h ago"); smaller units are dropped. Less than one
// second either way is "now". A zero t gives "".
func Relative(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	if d := t.Sub(now); d > -time.Second && d < time.Second {
		return "now"
	}
	// Built in a stack buffer, one allocation and no fmt: keys list
	// formats two of these a key, 100,000 keys at a time.
	var buf [48]byte
	return string(AppendRelative(buf[:0], t, now))
}

// AppendRelative appends Relative(t, now) to b.
func AppendRelative(b []byte, t, now time.Time) []byte {
	if t.IsZero() {
		return b
	}
	d := t.Sub(now)
	switch {
	case d > -time.Second && d < time.Second:
		return append(b, "now"...)
	case d > 0:
		return appendSpan(append(b, "in "...), d)
	}
	return append(appendSpan(b, -d), " ago"...)
}

// appendSpan appends a positive duration as one or two units, truncated.
func appendSpan(b []byte, d time.Duration) []byte {
	d = d.Truncate(time.Second)
	units := [...]struct {
		size time.Duration
		name byte
	}{{day, 'd'}, {time.Hour, 'h'}, {time.Minute, 'm'}, {time.Second, 's'}}
	for i, u := range units {
		if d < u.size && i < len(units)-1 {
			continue
		}
		b = strconv.AppendInt(b, int64(d/u.size), 10)
		b = append(b, u.name)
		if i+1 < len(units) {
			next := units[i+1]
			if n := (d % u.size) / next.size; n > 0 {
				b = append(b, ' ')
				b = strconv.AppendInt(b, int64(n), 10)
				b = append(b, next.name)
			}
		}
		return b
	}
	return append(b, "0s"...)
}

// Countdown formats a remaining duration for a live display: "14d 23h 59m"
// when long, "29:59" under an hour, "0:05" under a minute, "expired" at or
// below zero.
//
// The forms are stable (golden files depend on them), truncated to whole
// seconds:
//
//	d >= 24h      "14d 23h 59m", "1d 02h 03m" (hours and minutes two digits)
//	1h <= d < 24h "3h 04m 05s" (minutes and seconds two digits)
//	0 < d < 1h    "29:59", "0:05", and "0:00" for less than a second
//	d <= 0        "expired"
func Countdown(d time.Duration) string {
	if d <= 0 {
		return "expired"
	}
	d = d.Truncate(time.Second)
	switch {
	case d >= day:
		return fmt.Sprintf("%dd %02dh %02dm", d/day, (d%day)/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %02dm %02ds", d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second)
	default:
		return fmt.Sprintf("%d:%02d", d/time.Minute, (d%time.Minute)/time.Second)
	}
}

// TimeLayout is how an absolute time is written everywhere: always UTC, to
// the second.
const TimeLayout = "2006-01-02 15:04:05 UTC"

// Stamp writes t in TimeLayout, or "—" for the zero time.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(TimeLayout)
}

// AppendStamp appends Stamp(t) to b.
func AppendStamp(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "—"...)
	}
	return t.UTC().AppendFormat(b, TimeLayout)
}

// Span renders a positive duration as one or two units, truncated to whole
// seconds: "14d 23h", "2h 5m", "29m", "45s"; zero or less is "0s".
func Span(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var buf [32]byte
	return string(appendSpan(buf[:0], d))
}

// Ago renders how long ago t was, coarsely, as the keys table's Last Used
// shows it: "never" for the zero time, "just now", "3 min ago", "5 h ago",
// "2 d ago".
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return ago(d/time.Minute, " min ago")
	case d < 48*time.Hour:
		return ago(d/time.Hour, " h ago")
	default:
		return ago(d/day, " d ago")
	}
}

// ago is n and unit, in one allocation (keys list writes one a key).
func ago(n time.Duration, unit string) string {
	var buf [32]byte
	return string(append(strconv.AppendInt(buf[:0], int64(n), 10), unit...))
}
