//go:build linux || freebsd || netbsd || openbsd || solaris || dragonfly

package clipboard

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFakeXclip: the helper is found on first use (not at init), text goes in
// on its stdin and comes back from its output.
func TestFakeXclip(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "clip")
	script := "#!/bin/sh\ncase \"$1\" in -in) " + cat + " > " + store + ";; -out) " + cat + " " + store + ";; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "xclip"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir) // set after the package's init: a lookup at init would have missed it
	t.Setenv("WAYLAND_DISPLAY", "")
	if !Supported() {
		t.Fatal("xclip on PATH, but Supported() = false")
	}
	if err := WriteAll("héllo\nworld"); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAll(); err != nil || got != "héllo\nworld" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}
