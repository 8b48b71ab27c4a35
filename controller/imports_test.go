package controller_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFrontEndsImportOnlyController: the CLI, the HTTP API and the MCP
// server are front-ends like any embedder's, so package controller must be
// all they need. None of their files, tests included, imports a package below it.
func TestFrontEndsImportOnlyController(t *testing.T) {
	below := []string{"capture", "cas", "checkpoints", "retention", "migrations"}
	for _, dir := range []string{"../cmd", "httpapi", "mcpserver", "acpproxy"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range below {
					if path == "github.com/ckpt/ckpt/"+b || strings.HasPrefix(path, "github.com/ckpt/ckpt/"+b+"/") {
						t.Errorf("%s imports %s: front-ends use package controller only", p, path)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgentLayer: package agent (the agents' hooks, decoders and
// installers) is a library beside the front-ends: it may use controller
// but no front-end, and controller, which knows no agent, never imports
// it.
func TestAgentLayer(t *testing.T) {
	check := func(dir string, banned ...string) {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range banned {
					if path == "github.com/ckpt/ckpt/"+b || strings.HasPrefix(path, "github.com/ckpt/ckpt/"+b+"/") {
						t.Errorf("%s imports %s", p, path)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("../agent", "cmd", "capture", "cas", "checkpoints", "retention", "migrations", "remote")
	check(".", "agent", "cmd")
}
