//go:build linux

package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/atotto/clipboard"
)

// TestNativeClipboardFoundOnFirstUse: the native clipboard's helper program
// is looked up on first use, not in a package init (third_party's fork of
// atotto/clipboard), so a CLI call that never copies pays no PATH lookups. A
// fake xclip put on PATH after init is found, and text goes through it.
func TestNativeClipboardFoundOnFirstUse(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "clip")
	script := "#!/bin/sh\ncase \"$1\" in -in) " + cat + " > " + saved + ";; -out) " + cat + " " + saved + ";; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "xclip"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("WAYLAND_DISPLAY", "")
	if err := clipboard.WriteAll("héllo\nworld"); err != nil {
		t.Fatalf("WriteAll with xclip on PATH: %v", err)
	}
	if got, err := clipboard.ReadAll(); err != nil || got != "héllo\nworld" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}
