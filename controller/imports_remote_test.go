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

// eachImport calls fn with every Go file of dir (deep: and of every
// directory below it), tests included, and each package it imports.
func eachImport(t *testing.T, dir string, deep bool, fn func(file, path string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if !deep && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
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
	const module = "github.com/ckpt/ckpt/"
	return path == module+pkg || strings.HasPrefix(path, module+pkg+"/")
}

// TestFrontEndsSyncThroughRemote: package remote is the peer API beside
// controller for sync and pull (remote/doc.go). A front-end reaches object
// storage through it (remote.OpenConfig picks the backend from the
// configuration), never by importing remote's backends itself.
func TestFrontEndsSyncThroughRemote(t *testing.T) {
	for _, dir := range []string{"../cmd", "httpapi", "mcpserver", "acpproxy"} {
		eachImport(t, dir, true, func(file, path string) {
			if within(path, "remote/backend") {
				t.Errorf("%s imports %s: front-ends sync through package remote", file, path)
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
		eachImport(t, dir, true, func(file, path string) {
			if within(path, "remote") {
				t.Errorf("%s imports %s: remote is above controller", file, path)
			}
		})
	}
}
