package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
)

// TestNewSessionTree: forks go under their parent, a fork of a removed
// session and every member of a cycle are placed once, roots sort by id,
// and every "children" is a list, never null.
func TestNewSessionTree(t *testing.T) {
	fork := func(id, parent string, turn int) controller.SessionInfo {
		i := controller.SessionInfo{ID: id}
		if parent != "" {
			i.Parent, i.ParentTurn = parent, turn
		}
		return i
	}
	infos := []controller.SessionInfo{
		fork("a", "", 0), fork("b", "a", 2), fork("c", "b", 1), fork("d", "gone", 3),
		fork("e", "f", 1), fork("f", "e", 1), fork("g", "a", 5),
	}
	var shape func(ns []*wire.SessionNode) string
	shape = func(ns []*wire.SessionNode) string {
		var parts []string
		for _, n := range ns {
			parts = append(parts, n.ID+"("+shape(n.Children)+")")
		}
		return strings.Join(parts, " ")
	}
	if got, want := shape(wire.NewSessionTree(infos)), "a(b(c()) g()) d() e(f())"; got != want {
		t.Errorf("tree %s, want %s", got, want)
	}
	b, err := json.Marshal(wire.NewSessionTree(nil))
	if err != nil || string(b) != "[]" {
		t.Errorf("empty tree: %s %v", b, err)
	}
	b, _ = json.Marshal(wire.NewSessionTree(infos[:1]))
	if !strings.Contains(string(b), `"children":[]`) {
		t.Errorf("a leaf's children: %s", b)
	}
}

// TestEachLine: the tree as text draws each fork under its parent with
// the turn it was made before, and a root whose parent is gone says so.
func TestEachLine(t *testing.T) {
	fork := func(id, parent string, turn int) controller.SessionInfo {
		i := controller.SessionInfo{ID: id}
		if parent != "" {
			i.Parent, i.ParentTurn = parent, turn
		}
		return i
	}
	infos := []controller.SessionInfo{fork("a", "", 0), fork("b", "a", 2), fork("c", "b", 1), fork("d", "gone", 3), fork("g", "a", 5)}
	var lines []string
	wire.EachLine(wire.NewSessionTree(infos), func(name string, s wire.Session) { lines = append(lines, name) })
	want := []string{"a", "├─ b (turn 2)", "│  └─ c (turn 1)", "└─ g (turn 5)", "d (from gone turn 3, gone)"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
