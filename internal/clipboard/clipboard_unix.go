//go:build linux || freebsd || netbsd || openbsd || solaris || dragonfly

package clipboard

import (
	"os"
	"os/exec"
	"strings"
	"sync"
)

// helpers is the copy and paste command lines, found on first use in the
// order atotto/clipboard tries them; trimCRLF for Windows' clip.exe (WSL).
type helpers struct {
	copy, paste []string
	trimCRLF    bool
	ok          bool
}

var find = sync.OnceValue(func() helpers {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, err := exec.LookPath(n); err != nil {
				return false
			}
		}
		return true
	}
	if os.Getenv("WAYLAND_DISPLAY") != "" && has("wl-copy", "wl-paste") {
		return helpers{copy: []string{"wl-copy"}, paste: []string{"wl-paste", "--no-newline"}, ok: true}
	}
	switch {
	case has("xclip"):
		return helpers{copy: []string{"xclip", "-in", "-selection", "clipboard"}, paste: []string{"xclip", "-out", "-selection", "clipboard"}, ok: true}
	case has("xsel"):
		return helpers{copy: []string{"xsel", "--input", "--clipboard"}, paste: []string{"xsel", "--output", "--clipboard"}, ok: true}
	case has("termux-clipboard-set", "termux-clipboard-get"):
		return helpers{copy: []string{"termux-clipboard-set"}, paste: []string{"termux-clipboard-get"}, ok: true}
	case has("clip.exe", "powershell.exe"):
		return helpers{copy: []string{"clip.exe"}, paste: []string{"powershell.exe", "Get-Clipboard"}, trimCRLF: true, ok: true}
	}
	return helpers{}
})

func supported() bool { return find().ok }

func writeAll(text string) error {
	h := find()
	if !h.ok {
		return ErrUnsupported
	}
	cmd := exec.Command(h.copy[0], h.copy[1:]...)
	cmd.Stdin = strings.NewReader(text)
	return cmd.Run()
}

func readAll() (string, error) {
	h := find()
	if !h.ok {
		return "", ErrUnsupported
	}
	out, err := exec.Command(h.paste[0], h.paste[1:]...).Output()
	if err != nil {
		return "", err
	}
	s := string(out)
	if h.trimCRLF {
		s = strings.TrimSuffix(s, "\r\n")
	}
	return s, nil
}
