// Package appbench measures the interactive app as a person meets it: the
// real static shipkey binary in a real terminal (a private tmux server).
// It has no code of its own but the bare program (./bare: a Bubble Tea
// program that renders one static line, the framework's floor, measured
// beside the app), only benchmarks:
//
//   - BenchmarkFirstFrame: exec → first frame written to the terminal, at 1
//     and 100k keys (stores from store/storetest). A launcher (bash) notes
//     the wall clock ($EPOCHREALTIME) and execs shipkey; the app, with
//     SHIPKEY_TRACE_FIRST_FRAME set, appends the time its first frame went
//     out (tui.EnvTraceFirstFrame).
//
//   - BenchmarkIdle: the app's CPU while it sits on each screen (welcome,
//     keys table, token details, the form, the device-code sign-in) for
//     SHIPKEY_IDLE_SECONDS (default 20), from /proc/<pid>/stat
//     (utime+stime) and /proc/<pid>/task/*/schedstat (time on CPU, ns).
//
//   - BenchmarkMemory: the app's peak resident set (VmHWM) at 1 and 100k
//     keys once the keys table shows, again after a reload (another
//     process marked a key used), and the time from the first frame to the
//     key list on screen.
//
//     go test ./cmd/shipkey/appbench -run '^$' -bench . -benchtime 20x
package appbench
