package text_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// terminalPackages are the directories (from the module's root) whose
// writes to the command's terminal streams, IOStreams' ErrOut and Out, go
// through text.Writer (ErrText, OutText), so that what they print is
// text.Clean: cleaned where it entered, or the program's own words.
var terminalPackages = []string{"cmd/internal/cli", "tui"}

// programData are the functions that may write to a terminal stream
// directly, as "function stream", with the reason: what they write is
// data for a program (a token, a key set), which cleaning would change.
var programData = map[string]string{
	"tokenRun Out":          "the token's Authorization header or curl config line, for a script (the token whole)",
	"registerClientKey Out": "the generated client key's public key set (JWKS), for a script to register",
	"demoRun Out":           "demo --serve's realm settings, key: value lines a script parses",
	"teamJoinRun Out":       "the member line (or recipient) a script hands to team add",
}

// notYet are writes of prose not converted to text.Writer yet, each with
// what it writes (none now: keep it empty).
var notYet = map[string]string{}

// TestTerminalWritesAreClean walks the terminal packages' Go files (tests
// aside), as a linter would, and fails on a call of fmt.Fprint, Fprintf,
// Fprintln or io.WriteString whose writer is a terminal stream (an
// expression ending in .ErrOut or .Out, or a variable set from one) outside
// programData: prose goes through ErrText or OutText, which take only
// text.Clean, so an unclean string does not get there.
func TestTerminalWritesAreClean(t *testing.T) {
	t.Parallel()
	fset, pkgs := parseModule(t)
	used := map[string]bool{}
	files := 0
	for _, dir := range terminalPackages {
		if len(pkgs[dir]) == 0 {
			t.Fatalf("no Go file in %s: the walk is broken", dir)
		}
		for _, f := range pkgs[dir] {
			if strings.HasSuffix(fset.Position(f.Package).Filename, "_test.go") {
				continue
			}
			files++
			for _, w := range directWrites(f) {
				key := w.fn + " " + w.stream
				if programData[key] != "" || notYet[key] != "" {
					used[key] = true
					continue
				}
				t.Errorf("%s: %s writes to %s with %s: write prose with %s().Line/Linef (text.Clean), or name the function in programData with why its output is data",
					fset.Position(w.pos), w.fn, w.stream, w.call, writerOf(w.stream))
			}
		}
	}
	if files == 0 {
		t.Fatal("found no file to check: the walk is broken")
	}
	for _, list := range []map[string]string{programData, notYet} {
		for key := range list {
			if !used[key] {
				t.Errorf("%q writes to its stream directly no more: drop it from the list", key)
			}
		}
	}
}

func writerOf(stream string) string {
	if stream == "Out" {
		return "OutText"
	}
	return "ErrText"
}

// termWrite is a direct write to a terminal stream.
type termWrite struct {
	pos              token.Pos
	fn, stream, call string
}

// directWriters are the calls that write to their first argument.
var directWriters = map[string]bool{"fmt.Fprint": true, "fmt.Fprintf": true, "fmt.Fprintln": true, "io.WriteString": true}

// directWrites is f's calls of directWriters whose writer is a terminal
// stream: an expression ending in .ErrOut or .Out, or a variable of the
// same function set from one (w := opts.IO.ErrOut).
func directWrites(f *ast.File) []termWrite {
	var out []termWrite
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := funcName(fd)
		aliases := map[string]string{}
		alias := func(lhs []ast.Expr, rhs []ast.Expr) {
			for i, r := range rhs {
				if s := streamOf(r, aliases); s != "" && i < len(lhs) {
					if id, ok := lhs[i].(*ast.Ident); ok {
						aliases[id.Name] = s
					}
				}
			}
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				alias(n.Lhs, n.Rhs)
			case *ast.ValueSpec:
				lhs := make([]ast.Expr, len(n.Names))
				for i, id := range n.Names {
					lhs[i] = id
				}
				alias(lhs, n.Values)
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) == 0 {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || !directWriters[pkg.Name+"."+sel.Sel.Name] {
					return true
				}
				if s := streamOf(n.Args[0], aliases); s != "" {
					out = append(out, termWrite{pos: n.Pos(), fn: fn, stream: s, call: pkg.Name + "." + sel.Sel.Name})
				}
			}
			return true
		})
	}
	return out
}

// streamOf is "ErrOut" or "Out" when e is a terminal stream, else "".
func streamOf(e ast.Expr, aliases map[string]string) string {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return streamOf(e.X, aliases)
	case *ast.SelectorExpr:
		if n := e.Sel.Name; n == "ErrOut" || n == "Out" {
			return n
		}
	case *ast.Ident:
		return aliases[e.Name]
	}
	return ""
}

// funcName is a function's name, a method's as Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if g, ok := typ.(*ast.IndexExpr); ok {
		typ = g.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// TestTerminalWriteCheckCatches: the walk finds a direct write to a
// terminal stream, through a variable too, and leaves writes of clean
// text and to other writers alone.
func TestTerminalWriteCheckCatches(t *testing.T) {
	t.Parallel()
	src := `package p
func f(opts *options, s string) {
	fmt.Fprintf(opts.IO.ErrOut, "key %s\n", s)
	w := opts.IO.Out
	fmt.Fprintln(w, s)
	_, _ = io.WriteString((f.IO.ErrOut), s)
	opts.IO.ErrText().Linef("key %s", s)
	fmt.Fprintln(tw, s)
	_ = fmt.Sprintf("%s", opts.IO.Out)
}
func (p *progress) draw() {
	var out io.Writer = p.ios.ErrOut
	fmt.Fprint(out, "\x1b[K")
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range directWrites(f) {
		got = append(got, w.fn+" "+w.stream+" "+w.call)
	}
	want := []string{"f ErrOut fmt.Fprintf", "f Out fmt.Fprintln", "f ErrOut io.WriteString", "progress.draw ErrOut fmt.Fprint"}
	if !slices.Equal(got, want) {
		t.Errorf("direct writes = %q, want %q", got, want)
	}
}
