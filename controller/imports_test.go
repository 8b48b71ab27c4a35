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

const module = "github.com/ckpt/ckpt/"

// eachImport calls fn with every Go file under dir, tests included, and
// each package it imports.
func eachImport(t *testing.T, dir string, fn func(file, path string)) {
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
			fn(p, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// within reports whether path is package pkg of this module or one below it.
func within(path, pkg string) bool {
	return path == module+pkg || strings.HasPrefix(path, module+pkg+"/")
}

// TestFrontEndsImportOnlyController: the CLI, the HTTP API and the MCP
// server are front-ends like any embedder's, so package controller must be
// all they need, with package remote beside it for sync and pull. None of
// their files, tests included, imports a package below controller, nor
// remote's backends (remote.OpenConfig picks one from the configuration).
func TestFrontEndsImportOnlyController(t *testing.T) {
	below := []string{"capture", "cas", "checkpoints", "retention", "migrations", "remote/backend"}
	for _, dir := range []string{"../cmd", "httpapi", "mcpserver", "acpproxy"} {
		eachImport(t, dir, func(file, path string) {
			for _, b := range below {
				if within(path, b) {
					t.Errorf("%s imports %s: front-ends use packages controller and remote only", file, path)
				}
			}
		})
	}
}

// TestRemoteIsAbove: package remote and its backends sit above controller
// (remote imports it), so controller, the packages below it and the
// front-ends inside it never import them: a program that does not sync
// links no object-storage client.
func TestRemoteIsAbove(t *testing.T) {
	for _, dir := range []string{".", "../retention", "../capture", "../checkpoints", "../cas", "../migrations"} {
		eachImport(t, dir, func(file, path string) {
			if within(path, "remote") {
				t.Errorf("%s imports %s: remote is above controller", file, path)
			}
		})
	}
}
