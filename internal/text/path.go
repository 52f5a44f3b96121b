package text

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path shortens the home directory to ~ for messages and sanitizes the rest
// (a directory name is untrusted text too).
func Path(p string) string {
	home, err := os.UserHomeDir()
	if err == nil && home != "" && home != "/" {
		if p == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return Safe("~" + string(filepath.Separator) + rest)
		}
	}
	return Safe(p)
}

// FileError words a file system failure as "op path: reason" without the
// path appearing twice.
func FileError(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, Path(path), err)
}
