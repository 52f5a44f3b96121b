package audit

import "testing"

// The ssh session of an environment: SSH_CONNECTION with SSH_TTY when set,
// the last entry of a name winning (as exec takes it); none outside ssh.
func TestSSHSessionOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, ""},
		{[]string{"HOME=/root", "SSH_TTY=/dev/pts/1"}, ""},
		{[]string{"SSH_CONNECTION=203.0.113.7 50022 10.0.0.2 22"}, "203.0.113.7 50022 10.0.0.2 22"},
		{[]string{"SSH_CONNECTION=198.51.100.1 1 10.0.0.2 22", "SSH_TTY=/dev/pts/4", "SSH_CONNECTION=203.0.113.7 50022 10.0.0.2 22"},
			"203.0.113.7 50022 10.0.0.2 22 tty /dev/pts/4"},
		{[]string{"XSSH_CONNECTION=nope"}, ""},
	} {
		if got := SSHSessionOf(c.env); got != c.want {
			t.Errorf("SSHSessionOf(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
