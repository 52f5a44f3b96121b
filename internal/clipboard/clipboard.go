// Package clipboard reads and writes the native clipboard through the
// platform's helper programs, as github.com/atotto/clipboard does, but finds
// those programs on first use instead of in a package init: a shipkey token
// call must not pay for PATH lookups of xclip, xsel, wl-copy and others
// (53 failed file lookups per process) that only the interactive app needs.
package clipboard

import "errors"

// ErrUnsupported: no clipboard helper program was found.
var ErrUnsupported = errors.New("no clipboard utilities available; install xsel, xclip, wl-clipboard or Termux:API")

// Supported reports whether a clipboard helper was found (looked up once).
func Supported() bool { return supported() }

// WriteAll puts text on the clipboard.
func WriteAll(text string) error { return writeAll(text) }

// ReadAll returns the clipboard's text.
func ReadAll() (string, error) { return readAll() }
