package cli

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/shipkey/shipkey/auth"
	"github.com/shipkey/shipkey/auth/authtest"
)

// cmdHeaderServer starts a loopback HTTP server that writes the
// Authorization header of each request it gets to FILE (the last one
// wins) and puts its URL in $HEADER_URL. The script runs curl: without it,
// it fails.
//
//	headerserver FILE
func cmdHeaderServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: headerserver FILE")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		ts.Fatalf("curl is not installed (.ci/test.sh installs it)")
	}
	path := ts.MkAbs(args[0])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = os.WriteFile(path, []byte("Authorization: "+r.Header.Get("Authorization")+"\n"), 0o600)
		w.WriteHeader(http.StatusNoContent)
	}))
	ts.Defer(srv.Close)
	ts.Setenv("HEADER_URL", srv.URL)
}

// cmdJSONField asserts that the JSON object in FILE has, at the dotted PATH,
// a string matching the value given (exactly), or with -set any non-empty
// string, or with -absent nothing at all; -keys lists the object's keys
// (sorted, comma-separated) at PATH ("." for the top).
//
//	jsonfield FILE PATH VALUE | -set | -absent | -keys K1,K2
func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: jsonfield FILE PATH VALUE|-set|-absent|-keys K,...")
	}
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &v))
	found := true
	if args[1] != "." {
		for _, part := range strings.Split(args[1], ".") {
			m, ok := v.(map[string]any)
			if !ok {
				ts.Fatalf("%s: %s is not inside an object", args[0], args[1])
			}
			if v, found = m[part]; !found {
				break
			}
		}
	}
	switch args[2] {
	case "-absent":
		if found {
			ts.Fatalf("%s: %s is present: %v", args[0], args[1], v)
		}
	case "-set":
		if s, ok := v.(string); !found || !ok || s == "" {
			ts.Fatalf("%s: %s is not a non-empty string: %v", args[0], args[1], v)
		}
	case "-keys":
		m, ok := v.(map[string]any)
		if !ok || len(args) != 4 {
			ts.Fatalf("%s: %s is not an object", args[0], args[1])
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if got := strings.Join(keys, ","); got != args[3] {
			ts.Fatalf("%s: keys of %s are %s, want %s", args[0], args[1], got, args[3])
		}
	default:
		if s, ok := v.(string); !found || !ok || s != args[2] {
			ts.Fatalf("%s: %s = %v, want %q", args[0], args[1], v, args[2])
		}
	}
}

func TestCurlConfigHeaderQuoting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ token, want string }{
		{"abc.def-_", `header = "Authorization: Bearer abc.def-_"` + "\n"},
		{`a"b\c` + "\t", `header = "Authorization: Bearer a\"b\\c\t"` + "\n"},
	} {
		got, err := curlConfigHeader(&auth.TokenSet{AccessToken: tc.token})
		if err != nil || got != tc.want {
			t.Errorf("curlConfigHeader(%q) = %q, %v; want %q", tc.token, got, err, tc.want)
		}
	}
	if _, err := curlConfigHeader(&auth.TokenSet{AccessToken: "a\x1bb"}); err == nil || strings.Contains(err.Error(), "a\x1bb") {
		t.Errorf("a control character: err = %v, want one that does not echo the token", err)
	}
}

// TestExecEarlySignal sends a signal to shipkey exec while it is still
// getting the token (the realm holds the refresh): shipkey ends with 128+N
// and the command never runs.
func TestExecEarlySignal(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("shipkey") // the test binary, as testscript.Main put it on PATH
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			srv := authtest.NewServer(lcConfig(nil))
			t.Cleanup(srv.Close)
			c := newCLIRun(t, bin, time.Minute)
			c.newKey(srv, "k")
			srv.Inject(authtest.Fault{Endpoint: "token", Delay: time.Minute})

			marker := filepath.Join(t.TempDir(), "ran")
			cmd := exec.CommandContext(c.ctx, bin, "exec", "--min-valid", "1000h", "--", "sh", "-c", "echo ran > "+marker)
			cmd.Env = c.env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait (bounded) until the refresh is at the server.
			if !eventually(10*time.Second, func() bool { return srv.Count("refresh_token") > 0 }) {
				t.Fatal("no refresh reached the server")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Fatalf("exit: %v, want code %d; stderr:\n%s", err, 128+int(sig), stderr.String())
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the command ran (%v)", err)
			}
			if got := strings.TrimSpace(stderr.String()); strings.Count(got, "\n") != 0 || !strings.Contains(got, "the command was not run") {
				t.Fatalf("stderr = %q, want one line saying the command was not run", got)
			}
		})
	}
}
