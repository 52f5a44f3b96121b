package tui

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// clipTool is one system clipboard program: the command that writes its
// stdin to the clipboard and, when there is one, the command that prints
// the clipboard.
type clipTool struct {
	copy, paste []string
	trimCRLF    bool   // the paste command ends lines with CR LF (Windows)
	copyPath    string // where copy[0] was found
	pastePath   string // where paste[0] was found; "" when it was not
}

// clipCandidates are the clipboard programs in the order they are tried,
// for an environment read through getenv: Wayland's first when
// WAYLAND_DISPLAY is set, then macOS's, then X11's, then Windows's
// (clip.exe is also what WSL reaches).
func clipCandidates(getenv func(string) string) []clipTool {
	var c []clipTool
	if getenv("WAYLAND_DISPLAY") != "" {
		c = append(c, clipTool{copy: []string{"wl-copy"}, paste: []string{"wl-paste", "--no-newline"}})
	}
	return append(c,
		clipTool{copy: []string{"pbcopy"}, paste: []string{"pbpaste"}},
		clipTool{copy: []string{"xclip", "-in", "-selection", "clipboard"}, paste: []string{"xclip", "-out", "-selection", "clipboard"}},
		clipTool{copy: []string{"xsel", "--input", "--clipboard"}, paste: []string{"xsel", "--output", "--clipboard"}},
		clipTool{copy: []string{"clip.exe"}, paste: []string{"powershell.exe", "-NoProfile", "-Command", "Get-Clipboard"}, trimCRLF: true},
	)
}

// errNoClipboardProgram: none of the clipboard programs is on PATH.
var errNoClipboardProgram = errors.New("no clipboard program found (wl-copy, pbcopy, xclip, xsel or clip.exe)")

// clipToolWait bounds one run of a clipboard program: one that hangs (an X
// server that does not answer) must not hold the copy forever.
const clipToolWait = 5 * time.Second

// nativeClipboard is the system clipboard through the first of its
// programs found on PATH. Nothing is looked up until the first Write or
// Read (a process that never copies pays no PATH lookups), and the lookup
// is done once.
type nativeClipboard struct {
	getenv   func(string) string
	lookPath func(string) (string, error)

	once sync.Once
	tool *clipTool // nil: none found
}

// newNativeClipboard is the system clipboard of this process's
// environment.
func newNativeClipboard() *nativeClipboard {
	return &nativeClipboard{getenv: os.Getenv, lookPath: exec.LookPath}
}

// find looks the clipboard programs up, once.
func (c *nativeClipboard) find() *clipTool {
	c.once.Do(func() {
		for _, t := range clipCandidates(c.getenv) {
			p, err := c.lookPath(t.copy[0])
			if err != nil {
				continue
			}
			t.copyPath = p
			if pp, err := c.lookPath(t.paste[0]); err == nil {
				t.pastePath = pp
			}
			c.tool = &t
			return
		}
	})
	return c.tool
}

// Write puts s on the clipboard.
func (c *nativeClipboard) Write(s string) error {
	t := c.find()
	if t == nil {
		return errNoClipboardProgram
	}
	ctx, cancel := context.WithTimeout(context.Background(), clipToolWait)
	defer cancel()
	// No pipes for its output: xclip and wl-copy leave a process behind that
	// serves the selection, and it would hold a pipe open until the timeout.
	cmd := exec.CommandContext(ctx, t.copyPath, t.copy[1:]...)
	cmd.Stdin = strings.NewReader(s)
	return cmd.Run()
}

// Read returns what the clipboard holds.
func (c *nativeClipboard) Read() (string, error) {
	t := c.find()
	if t == nil {
		return "", errNoClipboardProgram
	}
	if t.pastePath == "" {
		return "", errors.New(t.paste[0] + " not found: the clipboard cannot be read")
	}
	ctx, cancel := context.WithTimeout(context.Background(), clipToolWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.pastePath, t.paste[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			return "", errors.New(msg)
		}
		return "", err
	}
	if t.trimCRLF {
		return strings.TrimSuffix(strings.ReplaceAll(out.String(), "\r\n", "\n"), "\n"), nil
	}
	return out.String(), nil
}
