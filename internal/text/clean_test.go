package text_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipkey/shipkey/internal/text"
	"github.com/shipkey/shipkey/internal/text/texttest"
)

const evil = "lab\x1b]52;c;ZXZpbA==\x07el\u202e\nx"

func TestCleanIsSafe(t *testing.T) {
	t.Parallel()
	if got, want := text.Sanitize(evil).String(), text.Safe(evil); got != want {
		t.Errorf("Sanitize = %q, want Safe's %q", got, want)
	}
	if got, want := text.SanitizeLines(evil).String(), text.SafeLines(evil); got != want {
		t.Errorf("SanitizeLines = %q, want SafeLines' %q", got, want)
	}
	c := text.Cleanf("key %s (%d) %v %q %s %-6s|", text.Sanitize(evil), 3, errors.New(evil), "a\x1bb", evil, "ab")
	texttest.RequireSafe(t, "Cleanf", c.String())
	want := "key " + text.Safe(evil) + " (3) " + text.Safe(evil) + ` "a\x1bb" ` + text.Safe(evil) + " ab    |"
	if c.String() != want {
		t.Errorf("Cleanf = %q, want %q", c, want)
	}
	if got := text.Cleanf("%s", 90*time.Second).String(); got != "1m30s" {
		t.Errorf("Cleanf(duration) = %q", got)
	}
	j := text.Join([]text.Clean{text.Sanitize("a\x1b"), text.Trusted("b")}, text.Trusted(", "))
	if got := text.Concat(j, text.Trusted("!")).String(); got != `a\x1b, b!` {
		t.Errorf("Join+Concat = %q", got)
	}
	var zero text.Clean
	if !zero.IsEmpty() || zero.Or(text.Trusted("-")).String() != "-" || j.Or(zero) != j || j.Len() != len(`a\x1b, b`) {
		t.Error("IsEmpty/Or/Len")
	}
}

// TestCleanDecodesUntrusted: a Clean read back from JSON is sanitized again,
// and written out as its text.
func TestCleanDecodesUntrusted(t *testing.T) {
	t.Parallel()
	var v struct{ Name text.Clean }
	raw, _ := json.Marshal(map[string]string{"Name": evil})
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.Name.String() != text.Safe(evil) {
		t.Errorf("decoded %q", v.Name)
	}
	out, _ := json.Marshal(v)
	if want := `{"Name":` + string(mustJSON(t, text.Safe(evil))) + `}`; string(out) != want {
		t.Errorf("encoded %s, want %s", out, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestErrorf(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause\x1b")
	err := text.Errorf("key %s, %q: %d: %w", "a\x1b", text.Sanitize("b\n"), 2, cause)
	if want := `key a\x1b, "b ": 2: cause` + "\x1b"; err.Error() != want {
		t.Errorf("Errorf = %q, want %q", err, want)
	}
	if !errors.Is(err, cause) {
		t.Error("Errorf does not wrap its %w")
	}
}

func TestTrustedRefusesControls(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Trusted took a constant with ESC")
		}
	}()
	text.Trusted("red\x1b[31m")
}

func TestWriter(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := text.NewWriter(&b)
	w.Line(text.Trusted("Got API key "), text.Sanitize("x\x1b[2J"))
	w.Linef("%s: %d keys from %s", text.Trusted("team"), 2, "etcd\x1b]0;t\x07")
	w.Print(text.Trusted("end"))
	want := "Got API key x\\x1b[2J\nteam: 2 keys from etcd\\x1b]0;t\\x07\nend"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

// cleanConstructors are the functions and methods whose first argument must
// be a constant: the program's own words.
var cleanConstructors = map[string]bool{"Trusted": true, "Cleanf": true, "Linef": true, "text.Errorf": true}

// TestCleanTextTakesConstants walks the module's Go files, as a linter would,
// and fails on a call of text.Trusted, text.Cleanf, text.Errorf or
// Writer.Linef whose first argument is not a constant string (or a printf-like
// wrapper's format parameter): untrusted text must become Clean through
// Sanitize.
func TestCleanTextTakesConstants(t *testing.T) {
	t.Parallel()
	fset, pkgs := parseModule(t)
	calls := 0
	for _, files := range pkgs {
		consts := packageConsts(files)
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				name := ""
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "text" && name == "Errorf" {
						name = "text.Errorf"
					}
				case *ast.Ident:
					name = fn.Name // inside package text
				}
				if !cleanConstructors[name] {
					return true
				}
				calls++
				if !isConstString(call.Args[0], consts) {
					t.Errorf("%s: %s takes a constant string only; clean untrusted text with text.Sanitize", fset.Position(call.Pos()), name)
				}
				return true
			})
		}
	}
	if calls == 0 {
		t.Fatal("found no call of Trusted, Cleanf or Linef: the walk is broken")
	}
}

// parseModule parses the module's Go files (outside testdata, vendor and
// hidden directories), by directory relative to the module's root.
func parseModule(t *testing.T) (*token.FileSet, map[string][]*ast.File) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the test's directory: %v", err)
	}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir = filepath.ToSlash(dir)
		pkgs[dir] = append(pkgs[dir], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, pkgs
}

// packageConsts is the names of the constants a package declares.
func packageConsts(files []*ast.File) map[string]bool {
	consts := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
				for _, s := range d.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						consts[id.Name] = true
					}
				}
			}
			return true
		})
	}
	return consts
}

func isConstString(e ast.Expr, consts map[string]bool) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.ParenExpr:
		return isConstString(e.X, consts)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && isConstString(e.X, consts) && isConstString(e.Y, consts)
	case *ast.Ident:
		// A printf-like wrapper hands on its own parameter named format (go
		// vet's printf check holds its callers to constant formats).
		return consts[e.Name] || e.Name == "format"
	}
	return false
}

// TestConstantCheckCatches: the walk's test of an argument tells a constant
// from a variable, so that it can fail.
func TestConstantCheckCatches(t *testing.T) {
	t.Parallel()
	src := `package p
const c = "x"
func f(s string) { text.Trusted(c + "y"); text.Trusted(s); text.Cleanf("%s" + s) }`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := packageConsts([]*ast.File{f})
	var got []bool
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && cleanConstructors[sel.Sel.Name] {
				got = append(got, isConstString(call.Args[0], consts))
			}
		}
		return true
	})
	if len(got) != 3 || !got[0] || got[1] || got[2] {
		t.Errorf("constant checks = %v, want [true false false]", got)
	}
}
