package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jsondoc/jsondoctest"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
)

// TestMain lets the test binary act as the real ckpt binary: testscript
// puts a copy of it on $PATH as "ckpt", and started under that name it runs
// main, signals and all. Scripts, the agent harnesses and every test that
// needs the binary as a process (ckptBinary) run that copy, so no test
// builds cmd/ckpt.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"ckpt": main})
}

// ckptBinary is the path of the ckpt binary TestMain put on $PATH.
func ckptBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ckpt")
	if err != nil {
		t.Fatalf("no ckpt on $PATH, which TestMain puts there: %v", err)
	}
	return bin
}

// TestScripts runs the end-to-end scripts in testdata/script against the
// real binary in temp workspaces. Each script's store is a separate temp
// directory outside its workspace.
func TestScripts(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("CKPT_HOME", env.T().(testing.TB).TempDir())
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"writebytes": cmdWriteBytes,
			"jsonhas":    cmdJSONHas,
			"isexec":     cmdIsExec,
			"nonull":     cmdNoNull,
			"manyfiles":  cmdManyFiles,
			"backdate":   cmdBackdate,
			"pause":      cmdPause,
		},
	})
}

// writebytes FILE KIND writes fixed non-text content: "binary" (every byte
// 0-255), "crlf" (Windows line ends), "latin1" (invalid UTF-8).
func cmdWriteBytes(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: writebytes FILE binary|crlf|latin1")
	}
	var b []byte
	switch args[1] {
	case "binary":
		for i := 0; i < 256; i++ {
			b = append(b, byte(i))
		}
	case "crlf":
		b = []byte("line one\r\nline two\r\n\r\nno newline at end")
	case "latin1":
		b = []byte("caf\xe9 cr\xe8me br\xfbl\xe9e\n")
	default:
		ts.Fatalf("unknown kind %q", args[1])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}

// jsonhas checks that stdout of the last command is JSON and that each
// PATH=VALUE holds, PATH being dot-separated keys and indexes (e.g.
// 0.files.1.kind=created; an empty PATH is the document). For an array the
// VALUE is its length. PATH alone only asserts the key exists.
func cmdJSONHas(ts *testscript.TestScript, neg bool, args []string) {
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &doc); err != nil {
		ts.Fatalf("stdout is not JSON: %v", err)
	}
	for _, a := range args {
		path, want, hasWant := strings.Cut(a, "=")
		cur := doc
		keys := strings.Split(path, ".")
		if path == "" {
			keys = nil // the document itself
		}
		for _, k := range keys {
			switch v := cur.(type) {
			case map[string]any:
				var ok bool
				if cur, ok = v[k]; !ok {
					ts.Fatalf("%s: no key %q", path, k)
				}
			case []any:
				var i int
				if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(v) {
					ts.Fatalf("%s: no index %q (len %d)", path, k, len(v))
				}
				cur = v[i]
			default:
				ts.Fatalf("%s: cannot index %T with %q", path, cur, k)
			}
		}
		if !hasWant {
			continue
		}
		var got string
		switch v := cur.(type) {
		case string:
			got = v
		case []any:
			got = fmt.Sprint(len(v))
		default:
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if (got == want) == neg {
			ts.Fatalf("%s = %s, want %s%s", path, got, map[bool]string{true: "not ", false: ""}[neg], want)
		}
	}
}

// nonull [KEY...] checks that stdout of the last command is one JSON
// document without null, except at the KEYs (which hold an object or null,
// never a list).
func cmdNoNull(ts *testscript.TestScript, neg bool, args []string) {
	nulls, err := jsondoctest.Nulls([]byte(ts.ReadFile("stdout")), args...)
	ts.Check(err)
	if (len(nulls) > 0) != neg {
		ts.Fatalf("null at %q", nulls)
	}
}

// manyfiles DIR N writes N small files of distinct content under DIR, in
// subdirectories of 100.
func cmdManyFiles(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: manyfiles DIR N")
	}
	var n int
	if _, err := fmt.Sscan(args[1], &n); err != nil {
		ts.Fatalf("manyfiles: N: %v", err)
	}
	for i := range n {
		dir := filepath.Join(ts.MkAbs(args[0]), fmt.Sprintf("d%03d", i/100))
		ts.Check(os.MkdirAll(dir, 0o755))
		ts.Check(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
}

// backdate PATH... sets each path's modification time two hours back.
func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	old := time.Now().Add(-2 * time.Hour)
	for _, a := range args {
		ts.Check(os.Chtimes(ts.MkAbs(a), old, old))
	}
}

// pause DURATION waits, e.g. for file times to age past the catalog's
// margin.
func cmdPause(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pause DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// isexec FILE checks that FILE has its owner-executable bit set.
func cmdIsExec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: isexec FILE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if (fi.Mode()&0o100 != 0) == neg {
		ts.Fatalf("%s mode %v: exec bit set = %v", args[0], fi.Mode(), !neg)
	}
}

// TestJSONListsCoverEveryCommand checks that json_lists.txtar runs every
// command with --json, so a command added later cannot print a null list
// unnoticed. serve prints its one JSON line before serving (serve_test.go
// reads it); hook, mcp and acp answer the agent (acp: and the editor) in
// their own protocol;
// demo is a tour for people and refuses --json; statusline prints the one
// line Claude Code shows.
func TestJSONListsCoverEveryCommand(t *testing.T) {
	b, err := os.ReadFile("testdata/script/json_lists.txtar")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	skip := map[string]bool{"serve": true, "hook": true, "mcp": true, "acp": true, "demo": true, "help": true, "statusline": true}
	var walk func(prefix string, cmd *cobra.Command)
	walk = func(prefix string, cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			name := strings.TrimSpace(prefix + " " + sub.Name())
			if skip[name] {
				continue
			}
			if sub.Runnable() && !strings.Contains(script, "\nckpt --json "+name) {
				t.Errorf("json_lists.txtar never runs `ckpt --json %s`", name)
			}
			walk(name, sub)
		}
	}
	walk("", newRoot(&app{}))
}
