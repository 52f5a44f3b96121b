package cli

import "testing"

// TestExecEnvRefusesWhatProgramsActOn pins exec's --env denylist: each name
// here makes the loader, the C library, git, a shell or a runtime read (and
// often print) the variable's value, so the token must never go there; the
// allowed names are ordinary ones a command reads as data.
func TestExecEnvRefusesWhatProgramsActOn(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"LD_PRELOAD", "LD_DEBUG", "DYLD_INSERT_LIBRARIES", "PATH", "IFS", "BASH_ENV",
		"GIT_DIR", "GIT_WORK_TREE", "GIT_TRACE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
		"GIT_EXEC_PATH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GLIBC_TUNABLES", "MALLOC_CONF",
		"MALLOC_ARENA_MAX", "MALLOC_CHECK_", "GCONV_PATH", "LC_ALL", "LANG", "TERM",
		"PYTHONWARNINGS", "PERL5OPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "SSH_ASKPASS",
		"PAGER", "EDITOR", "http_proxy", "HTTPS_PROXY", "SHIPKEY_PASSWORD",
	} {
		if !unsafeEnvName(name) {
			t.Errorf("--env %s accepted; programs act on that variable", name)
		}
	}
	for _, name := range []string{"SHIPKEY_TOKEN", "API_TOKEN", "GITHUB_TOKEN", "TOKEN", "ld_preload_is_not_it", "BEARER"} {
		if unsafeEnvName(name) {
			t.Errorf("--env %s refused; it is an ordinary name", name)
		}
	}
}
