package cli

import (
	"strings"
	"testing"
)

// TestPanicBecomesOneLine: a panic in a command ends shipkey with exit 1 and
// one line on stderr that holds no stack and nothing token-like.
func TestPanicBecomesOneLine(t *testing.T) {
	t.Parallel()
	const secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXZhbHVl.sig"
	ios, out, errOut := testIO("")
	code := func() (code int) {
		defer recoverInto(ios, &code)
		panic("token " + secret + " was bad\ngoroutine 1 [running]:\nmain.main()")
	}()
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	got := errOut.String()
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "shipkey: internal error") {
		t.Errorf("stderr is not one line: %q", got)
	}
	if strings.Contains(got, secret) || strings.Contains(got, "goroutine") {
		t.Errorf("stderr shows what it must not: %q", got)
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out)
	}
}
