package controller_test

import (
	"slices"
	"strings"
	"testing"
)

// TestFrontEndsImportOnlyController: the CLI, the HTTP API and the MCP
// server are front-ends like any embedder's, so package controller must be
// all they need to drive sessions. None of their files, tests included,
// imports a package below it; nor do the CLI's own packages (the picker,
// the demo, its wording). The one exception is package retention, the
// store-wide peer API whose results (a retention plan, a collection's or a
// verification's report, what Store.Open fails with for a lost index) the
// Store's retention methods return as they are, without aliases.
func TestFrontEndsImportOnlyController(t *testing.T) {
	below := []string{"capture", "cas", "checkpoints", "migrations"}
	for _, dir := range []string{"../cmd", "httpapi", "mcpserver", "acpproxy", "wire", "../internal/picker", "../internal/demo", "../internal/msg"} {
		eachImport(t, dir, true, func(file, path string) {
			for _, b := range below {
				if within(path, b) {
					t.Errorf("%s imports %s: front-ends use package controller only", file, path)
				}
			}
		})
	}
}

// TestWireLayer: package wire, the JSON documents the front-ends share
// and their text for people, sits between them and controller. It imports
// controller and, for its text, the leaf packages that word and encode
// for people (path quoting, sizes, one-line messages, JSON lists); nothing
// else of this module (its tests may use internal helpers), and controller
// imports neither it nor any front-end.
func TestWireLayer(t *testing.T) {
	const mod = "github.com/ckpt/ckpt/"
	check := func(dir string, ok func(path string, test bool) bool) {
		t.Helper()
		eachImport(t, dir, false, func(file, path string) {
			if strings.HasPrefix(path, mod) && !ok(strings.TrimPrefix(path, mod), strings.HasSuffix(file, "_test.go")) {
				t.Errorf("%s imports %s", file, path)
			}
		})
	}
	check("wire", func(path string, test bool) bool {
		text := []string{"internal/quote", "internal/units", "internal/msg", "internal/jsondoc"}
		return path == "controller" || path == "controller/wire" || slices.Contains(text, path) || test && strings.HasPrefix(path, "internal/")
	})
	check(".", func(path string, _ bool) bool {
		for _, above := range []string{"controller/wire", "controller/httpapi", "controller/mcpserver", "controller/acpproxy", "cmd", "internal/picker", "internal/demo"} {
			if within("github.com/ckpt/ckpt/"+path, above) {
				return false
			}
		}
		return true
	})
}

// TestCLIPackages: the packages cmd/ckpt's logic moved to sit beside it.
// The picker is a front-end over controller (and the CLI's wording); the
// demo drives the CLI through the Runner it is given, so it imports
// nothing of this module; the wording for people (msg) uses controller's
// types and the path quoting only. None of them imports cmd.
func TestCLIPackages(t *testing.T) {
	const mod = "github.com/ckpt/ckpt/"
	for dir, allowed := range map[string][]string{
		"../internal/picker": {"controller", "internal/quote", "internal/msg"},
		"../internal/demo":   nil,
		"../internal/msg":    {"controller", "internal/quote"},
	} {
		eachImport(t, dir, false, func(file, path string) {
			if strings.HasPrefix(path, mod) && !slices.Contains(allowed, strings.TrimPrefix(path, mod)) {
				t.Errorf("%s imports %s", file, path)
			}
		})
	}
}

// TestAgentLayer: the agent layer (agent: the agents' decoders and
// configuration formats; agent/hook: applying their events, the resident
// hook server; agent/setup: install, uninstall and check for a list of
// agents) is a library beside the front-ends: it may use controller but
// no front-end, and controller and every package below it, which know no
// agent, never import it. Within it, each package uses only those before
// it: agent neither hook nor setup, hook not setup.
func TestAgentLayer(t *testing.T) {
	check := func(dir string, deep bool, banned ...string) {
		t.Helper()
		eachImport(t, dir, deep, func(file, path string) {
			for _, b := range banned {
				if within(path, b) {
					t.Errorf("%s imports %s", file, path)
				}
			}
		})
	}
	check("../agent", true, "cmd", "capture", "cas", "checkpoints", "retention", "migrations", "remote")
	check("../agent", false, "agent/hook", "agent/setup")
	check("../agent/hook", true, "agent/setup")
	for _, dir := range []string{".", "../capture", "../cas", "../checkpoints", "../retention", "../migrations", "../remote", "../internal"} {
		check(dir, true, "agent", "cmd")
	}
}
