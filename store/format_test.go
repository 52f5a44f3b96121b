package store

import "testing"

func TestStatusString(t *testing.T) {
	t.Parallel()
	for s, want := range map[Status]string{StatusNoToken: "no_token", StatusValid: "valid", StatusRefreshable: "refreshable", StatusLoginNeeded: "login_needed"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}
