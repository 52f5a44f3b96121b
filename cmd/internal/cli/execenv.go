package cli

import (
	"slices"
	"strings"
)

// Variables exec's --env must not name: the dynamic loader, the C library,
// shells, git and language runtimes act on them (a token in LD_PRELOAD makes
// the loader print it to stderr; in GIT_DIR or GIT_TRACE git prints it; in
// GLIBC_TUNABLES or MALLOC_* the C library parses it; in LC_ALL or TERM a
// shell or curses warns with it; in PATH or IFS it changes what runs), and
// shipkey's own settings are not for the command. Whole namespaces go by
// prefix (every GIT_ variable belongs to git, which prints many of them).
var (
	unsafeEnvPrefixes = []string{
		"LD_", "DYLD_", "GLIBC_", "MALLOC_", "GCONV_", "LC_", "BASH_FUNC_", "GIT_",
		"PYTHON", "PERL", "RUBY", "NODE_", "JAVA_", "_JAVA_", "JDK_JAVA_", "SSH_", "SUDO_",
		"SHIPKEY_",
	}
	unsafeEnvNames = []string{
		"PATH", "IFS", "ENV", "BASH_ENV", "CDPATH", "PS4", "SHELLOPTS", "BASHOPTS",
		"GLOBIGNORE", "PROMPT_COMMAND", "SHELL", "HOME", "TMPDIR", "TERM", "TERMINFO", "TERMCAP",
		"LANG", "LANGUAGE", "TZ", "TZDIR", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF",
		"LOCALDOMAIN", "RES_OPTIONS", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN",
		"LESSCLOSE", "BROWSER", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
		"http_proxy", "https_proxy", "all_proxy", "no_proxy",
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
