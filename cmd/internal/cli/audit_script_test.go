package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/store/audit"
)

// auditSeenKey is the Env.Values key of the trail entries a script's
// audited commands have matched (by hash).
type auditSeenKey struct{}

// cmdAudited asserts that the audit trail holds exactly one entry not
// matched before with this way (via) and what, and that its receiver is:
// self (this test process, which ran the command: its pid and executable),
// pid=stdout (the pid the last command printed on its first line),
// exe=NAME (an executable NAME resolves to on PATH, or named NAME),
// ssh=SESSION (the ssh session named) or nossh (none). With
// "none": every entry has been matched.
//
//	audited VIA WHAT [self | pid=stdout | exe=NAME | ssh=SESSION | nossh]...
//	audited none
func cmdAudited(ts *testscript.TestScript, neg bool, args []string) {
	if neg || (len(args) < 2 && (len(args) != 1 || args[0] != "none")) {
		ts.Fatalf("usage: audited VIA WHAT [self|pid=stdout|exe=NAME]... | audited none")
	}
	seen, _ := ts.Value(auditSeenKey{}).(map[string]bool)
	if seen == nil {
		ts.Fatalf("audited: no script state")
	}
	entries := auditEntries(ts)
	var fresh []audit.Entry
	for _, e := range entries {
		if !seen[e.Hash] {
			fresh = append(fresh, e)
		}
	}
	if args[0] == "none" {
		if len(fresh) > 0 {
			ts.Fatalf("%d entries not expected, the first %+v", len(fresh), fresh[0])
		}
		return
	}
	var match []audit.Entry
	for _, e := range fresh {
		if e.Via == args[0] && string(e.What) == args[1] {
			match = append(match, e)
		}
	}
	if len(match) != 1 {
		ts.Fatalf("%d new entries of %s %s, want 1; new entries: %+v", len(match), args[0], args[1], fresh)
	}
	e := match[0]
	seen[e.Hash] = true
	if e.Fingerprint == "" || e.By <= 0 || e.Key == "" || e.Time.IsZero() {
		ts.Fatalf("an entry without its fingerprint, key, time or shipkey's pid: %+v", e)
	}
	if e.To.PID <= 0 || e.To.Exe == "" || len(e.To.Cmdline) == 0 || e.To.UID != os.Getuid() {
		ts.Fatalf("an entry without its receiver's pid, uid, executable or command line: %+v", e.To)
	}
	for _, want := range args[2:] {
		switch {
		case want == "self":
			exe, err := os.Executable()
			ts.Check(err)
			if e.To.PID != os.Getpid() || !sameFile(e.To.Exe, exe) {
				ts.Fatalf("received by pid %d %s, not by this test (pid %d %s)", e.To.PID, e.To.Exe, os.Getpid(), exe)
			}
		case want == "pid=stdout":
			line, _, _ := strings.Cut(ts.ReadFile("stdout"), "\n")
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			ts.Check(err)
			if e.To.PID != pid {
				ts.Fatalf("received by pid %d, not by the command's %d", e.To.PID, pid)
			}
		case want == "nossh":
			if e.To.SSH != "" {
				ts.Fatalf("received in ssh session %q, want none", e.To.SSH)
			}
		case strings.HasPrefix(want, "ssh="):
			if e.To.SSH != strings.TrimPrefix(want, "ssh=") {
				ts.Fatalf("received in ssh session %q, want %q", e.To.SSH, strings.TrimPrefix(want, "ssh="))
			}
		case strings.HasPrefix(want, "exe="):
			name := strings.TrimPrefix(want, "exe=")
			path, err := exec.LookPath(name)
			ts.Check(err)
			if !sameFile(e.To.Exe, path) {
				ts.Fatalf("received by %s, not by %s (%s)", e.To.Exe, name, path)
			}
		default:
			ts.Fatalf("audited: unknown receiver check %q", want)
		}
	}
}

// sameFile reports whether a and b are the same file after symbolic links.
func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// auditEntries reads the script's audit trail (every line must be whole).
func auditEntries(ts *testscript.TestScript) []audit.Entry {
	data, err := os.ReadFile(filepath.Join(ts.Getenv("SHIPKEY_STATE_DIR"), "audit", audit.CurrentFile))
	if os.IsNotExist(err) {
		return nil
	}
	ts.Check(err)
	var out []audit.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			ts.Fatalf("audit trail line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// cmdSockCall sends one request to a token socket from this test process
// (waiting up to 10 s for the socket to listen) and prints the answer's
// status and body on stdout.
//
//	sockcall SOCKET METHOD PATH [BODY]
func cmdSockCall(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: sockcall SOCKET METHOD PATH [BODY]")
	}
	sock := ts.MkAbs(args[0])
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	deadline := time.Now().Add(patience(10 * time.Second))
	for {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on %s: %v", sock, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var body io.Reader
	if len(args) == 4 {
		body = strings.NewReader(args[3])
	}
	req, err := http.NewRequest(args[1], "http://shipkey"+args[2], body)
	ts.Check(err)
	resp, err := c.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, b)
}
