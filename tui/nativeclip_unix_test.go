//go:build unix

package tui

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestNativeClipboardFoundOnFirstUse: the clipboard program is looked up on
// the first copy, not when the model is built (nor in a package init), so a
// process that never copies pays no PATH lookups. A fake xclip put on PATH
// after the clipboard was made is found, and text goes through it both ways.
func TestNativeClipboardFoundOnFirstUse(t *testing.T) {
	t.Parallel()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := t.TempDir()
	var looked []string
	env := map[string]string{"PATH": filepath.Join(dir, "empty")}
	c := &nativeClipboard{
		getenv: func(k string) string { return env[k] },
		lookPath: func(name string) (string, error) {
			looked = append(looked, name)
			p := filepath.Join(env["PATH"], name)
			if _, err := os.Stat(p); err != nil {
				return "", exec.ErrNotFound
			}
			return p, nil
		},
	}
	if len(looked) != 0 {
		t.Fatalf("looked up %v before the first copy", looked)
	}
	saved := filepath.Join(dir, "clip")
	script := "#!/bin/sh\ncase \"$1\" in -in) " + cat + " > " + saved + ";; -out) " + cat + " " + saved + ";; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "xclip"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env["PATH"] = dir
	if err := c.Write("héllo\nworld"); err != nil {
		t.Fatalf("Write with xclip on PATH: %v", err)
	}
	if got, err := c.Read(); err != nil || got != "héllo\nworld" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if want := []string{"pbcopy", "xclip", "xclip"}; !slices.Equal(looked, want) {
		t.Fatalf("looked up %v, want %v (once, in order)", looked, want)
	}
}

// TestNativeClipboardNoneSaysWhich: with no clipboard program on PATH a copy
// fails with one line naming the programs tried, and Wayland's comes first
// when WAYLAND_DISPLAY is set.
func TestNativeClipboardNoneSaysWhich(t *testing.T) {
	t.Parallel()
	var looked []string
	c := &nativeClipboard{
		getenv: func(k string) string {
			if k == "WAYLAND_DISPLAY" {
				return "wayland-0"
			}
			return ""
		},
		lookPath: func(name string) (string, error) { looked = append(looked, name); return "", exec.ErrNotFound },
	}
	if err := c.Write("x"); !errors.Is(err, errNoClipboardProgram) {
		t.Fatalf("Write = %v, want errNoClipboardProgram", err)
	}
	if _, err := c.Read(); !errors.Is(err, errNoClipboardProgram) {
		t.Fatalf("Read = %v, want errNoClipboardProgram", err)
	}
	if want := []string{"wl-copy", "pbcopy", "xclip", "xsel", "clip.exe"}; !slices.Equal(looked, want) {
		t.Fatalf("looked up %v, want %v", looked, want)
	}
}
