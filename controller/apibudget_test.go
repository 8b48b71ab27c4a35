package controller_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The budget of package controller's API: what an embedder has to learn.
// A new exported name has to fit under it (or replace a variant), and
// every one is documented. Together the two stay at most 100 (issue 23:
// 188 when it was filed).
const (
	// maxExported bounds the exported package-level identifiers: types,
	// functions, constants and variables.
	maxExported = 58
	// maxMethods bounds the exported methods of exported types.
	maxMethods = 41
)

// TestAPIBudget parses the package's non-test files, counts its exported
// identifiers and the exported methods of its exported types against the
// budget, and requires a doc comment on each of them (a name declared in
// a documented group, or a method of an exported type).
func TestAPIBudget(t *testing.T) {
	names, methods, undocumented := exportedAPI(t, ".")
	if len(names) > maxExported {
		t.Errorf("package controller exports %d identifiers, budget %d: %s", len(names), maxExported, strings.Join(names, " "))
	}
	if len(methods) > maxMethods {
		t.Errorf("exported types of package controller have %d exported methods, budget %d: %s", len(methods), maxMethods, strings.Join(methods, " "))
	}
	for _, u := range undocumented {
		t.Errorf("%s has no doc comment", u)
	}
	t.Logf("%d exported identifiers (budget %d), %d exported methods (budget %d)", len(names), maxExported, len(methods), maxMethods)
}

// exportedAPI returns the exported package-level identifiers of the Go
// package in dir (its non-test files), the exported methods of its
// exported types as Type.Method, and those of either without a doc
// comment.
func exportedAPI(t *testing.T, dir string) (names, methods, undocumented []string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	exportedType := map[string]bool{}
	var parsed []*ast.File
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	doc := func(groups ...*ast.CommentGroup) bool {
		for _, g := range groups {
			if g != nil && strings.TrimSpace(g.Text()) != "" {
				return true
			}
		}
		return false
	}
	for _, f := range parsed {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range gd.Specs {
				switch s := sp.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						exportedType[s.Name.Name] = true
						names = append(names, s.Name.Name)
						if !doc(s.Doc, gd.Doc) {
							undocumented = append(undocumented, "type "+s.Name.Name)
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, n.Name)
							if !doc(s.Doc, s.Comment, gd.Doc) {
								undocumented = append(undocumented, n.Name)
							}
						}
					}
				}
			}
		}
	}
	for _, f := range parsed {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				typ := fd.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				id, ok := typ.(*ast.Ident)
				if !ok || !exportedType[id.Name] {
					continue
				}
				name = id.Name + "." + name
				methods = append(methods, name)
			} else {
				names = append(names, name)
			}
			if !doc(fd.Doc) {
				undocumented = append(undocumented, name)
			}
		}
	}
	sort.Strings(names)
	sort.Strings(methods)
	sort.Strings(undocumented)
	return names, methods, undocumented
}
