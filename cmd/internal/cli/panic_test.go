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

// panickyWriter panics on every write, as a bug deep in a command would.
type panickyWriter struct{}

func (panickyWriter) Write([]byte) (int, error) {
	panic("writer broke holding eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.sig\ngoroutine 7 [running]:")
}

// TestEveryCommandRecoversAPanic: the recovery sits at the top of the
// program (runWith), so a command that panics (here version, writing to a
// stdout that panics) ends with exit 1 and one line, not a dump.
func TestEveryCommandRecoversAPanic(t *testing.T) {
	t.Parallel()
	var errOut strings.Builder
	ios := &iostreams{In: strings.NewReader(""), Out: panickyWriter{}, ErrOut: &errOut}
	code := runWith([]string{"version"}, ios, func(string) string { return "" })
	got := errOut.String()
	if code != exitFailure || strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "shipkey: internal error") {
		t.Errorf("exit %d, stderr %q", code, got)
	}
	if strings.Contains(got, "goroutine") || strings.Contains(got, "c2VjcmV0LXRva2Vu") {
		t.Errorf("stderr shows what it must not: %q", got)
	}
}
