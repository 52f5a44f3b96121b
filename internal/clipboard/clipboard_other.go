//go:build !(linux || freebsd || netbsd || openbsd || solaris || dragonfly)

package clipboard

import atotto "github.com/atotto/clipboard"

// Elsewhere (macOS, Windows) atotto/clipboard's init looks nothing up.

func supported() bool            { return !atotto.Unsupported }
func writeAll(text string) error { return atotto.WriteAll(text) }
func readAll() (string, error)   { return atotto.ReadAll() }
