package cli

import (
	"slices"
	"strings"
)

// Variables exec's --env must not name: the dynamic loader, shells and
// language runtimes act on them (a token in LD_PRELOAD makes the loader
// print it to stderr; one in PATH or IFS changes what runs), and shipkey's
// own settings are not for the command.
var (
	unsafeEnvPrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_", "SHIPKEY_"}
	unsafeEnvNames    = []string{
		"PATH", "IFS", "ENV", "BASH_ENV", "CDPATH", "PS4", "SHELLOPTS", "BASHOPTS",
		"GLOBIGNORE", "PROMPT_COMMAND", "SHELL", "HOME", "TMPDIR",
		"GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CONF",
		"NODE_OPTIONS", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PERL5OPT", "PERL5LIB",
		"RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "GIT_SSH_COMMAND",
	}
)

// unsafeEnvName reports whether exec may not put the token in the variable
// name. SHIPKEY_TOKEN, exec's default, is the one SHIPKEY_ name allowed.
func unsafeEnvName(name string) bool {
	if name == "SHIPKEY_TOKEN" {
		return false
	}
	if slices.Contains(unsafeEnvNames, name) {
		return true
	}
	for _, p := range unsafeEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
