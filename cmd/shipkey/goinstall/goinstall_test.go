package goinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

const modulePath = "github.com/shipkey/shipkey"

// TestGoInstallAtVersion installs shipkey and shipkey-team with `go install
// …@vX` from a local module proxy built from this checkout, and runs the
// installed `shipkey version`, which must name vX (from the build info: a
// go install build carries no ldflags).
func TestGoInstallAtVersion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds both programs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root := goEnv(t, goBin, "", "GOMOD")
	root = filepath.Dir(root)
	files := moduleFiles(t, root)

	// One version for every tree, with the go command's package index of
	// the module cache off (GODEBUG=goindex=0 below). The index is keyed by
	// the module's directory, which it takes as immutable: with it, one
	// version built a later tree with an earlier one's file lists
	// ("undefined: …" for a function in a new file). Without it the go
	// command reads the files, and the build cache, keyed by each package's
	// directory, files and imports' export data, compiles only what differs
	// from a tree built before: after a change to cmd/internal/cli, 10
	// CPU-seconds instead of the 24 of a version naming the content, which
	// compiled all fourteen packages every time.
	const vX = "v0.0.0-test"
	mv := module.Version{Path: modulePath, Version: vX}
	modCache := goEnv(t, goBin, root, "GOMODCACHE")
	lockModCache(t, vX)
	removeFromModCache(modCache, mv) // what a run killed before its cleanup left
	t.Cleanup(func() { removeFromModCache(modCache, mv) })

	proxy := t.TempDir()
	at := filepath.Join(proxy, filepath.FromSlash(modulePath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, mv, files); err != nil {
		t.Fatalf("module zip: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{vX, time.Now().UTC().Truncate(time.Second)})
	for name, data := range map[string][]byte{
		"list": []byte(vX + "\n"), vX + ".info": info, vX + ".mod": gomod, vX + ".zip": zipped.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	gobin := t.TempDir()
	cmd := exec.Command(goBin, "install",
		modulePath+"/cmd/shipkey@"+vX, modulePath+"/cmd/shipkey-team@"+vX)
	cmd.Dir = t.TempDir() // outside any module
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(modCache, "cache", "download")),
		"GOFLAGS=-mod=mod", "GONOSUMDB="+modulePath, "GOSUMDB=off", "GOPRIVATE=", "GONOPROXY=",
		"GOBIN="+gobin, "GOTOOLCHAIN=local", "GODEBUG="+strings.TrimPrefix(os.Getenv("GODEBUG")+",goindex=0", ","))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install …@%s: %v\n%s", vX, err, out)
	}

	exe := ""
	if filepath.Ext(goBin) == ".exe" {
		exe = ".exe"
	}
	for _, name := range []string{"shipkey", "shipkey-team"} {
		bin := filepath.Join(gobin, name+exe)
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("installed %s version: %v\n%s", name, err, out)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); first != "shipkey "+vX {
			t.Fatalf("installed %s version says %q, want %q:\n%s", name, first, "shipkey "+vX, out)
		}
	}
}

// goEnv is `go env name` run in dir.
func goEnv(t *testing.T, goBin, dir, name string) string {
	t.Helper()
	cmd := exec.Command(goBin, "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env %s: %v %s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkoutFile is one file of the module as the zip takes it.
type checkoutFile struct{ root, path string }

func (f checkoutFile) Path() string { return f.path }
func (f checkoutFile) Lstat() (os.FileInfo, error) {
	return os.Lstat(filepath.Join(f.root, filepath.FromSlash(f.path)))
}
func (f checkoutFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

// moduleFiles are the checkout's files as a release tag would have them:
// what git tracks or would (not ignored), from the working tree, so a
// change not yet committed is tested too. npm's node_modules and build
// output are ignored.
func moduleFiles(t *testing.T, root string) []modzip.File {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git ls-files in %s: %v (the test needs a git checkout)", root, err)
		}
		t.Skipf("not a git checkout (%v)", err)
	}
	var files []modzip.File
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			continue // deleted, not yet committed
		}
		files = append(files, checkoutFile{root, p})
	}
	return files
}

// lockModCache holds, until the test ends, the lock that keeps another run
// of this test (another checkout, or the same one run twice at once) from
// extracting vX into the shared module cache, or removing it, while this
// one builds from it.
func lockModCache(t *testing.T, vX string) {
	t.Helper()
	// One lock file a version, beside the system's other temporary files
	// (empty, and not removed: a waiter may hold it open).
	dir := filepath.Join(os.TempDir(), "shipkey-goinstall-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l := flock.New(filepath.Join(dir, vX+".lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if ok, err := l.TryLockContext(ctx, 100*time.Millisecond); !ok {
		t.Fatalf("another run of this test held %s for 10 minutes: %v", l.Path(), err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
}

// removeFromModCache deletes what go install put in the shared module cache
// for mv (its files are read-only there).
func removeFromModCache(modCache string, mv module.Version) {
	esc, err := module.EscapePath(mv.Path)
	if err != nil {
		return
	}
	dir := filepath.Join(modCache, filepath.FromSlash(esc)+"@"+mv.Version)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
	dl, _ := filepath.Glob(filepath.Join(modCache, "cache", "download", filepath.FromSlash(esc), "@v", mv.Version+".*"))
	for _, f := range dl {
		// v.zip, v.info, v.lock, …; not v.SUFFIX.zip, another version's.
		if !strings.Contains(strings.TrimPrefix(filepath.Base(f), mv.Version+"."), ".") {
			_ = os.Remove(f)
		}
	}
}
