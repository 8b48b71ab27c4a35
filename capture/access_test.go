package capture

import (
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The packages whose file access the guard checks, relative to this one.
var guardedDirs = []string{".", "../controller"}

// pathlessOS are the os functions that take no file path.
var pathlessOS = map[string]bool{
	"SameFile": true, "IsNotExist": true, "IsExist": true, "IsPermission": true, "IsTimeout": true,
	"Getenv": true, "LookupEnv": true, "Environ": true, "Getpid": true, "Getuid": true, "Geteuid": true,
	"Getgid": true, "Hostname": true, "NewSyscallError": true, "Exit": true, "UserHomeDir": true,
	"UserCacheDir": true, "UserConfigDir": true, "Executable": true, "Getwd": true, "Expand": true,
	"ExpandEnv": true, "Pipe": true, "Getpagesize": true, "TempDir": true,
}

// pathFilepath are the path/filepath functions that touch the file system.
var pathFilepath = map[string]bool{"Walk": true, "WalkDir": true, "EvalSymlinks": true, "Glob": true}

// allowedAccess lists, by "file:function", the calls on full paths that
// are not workspace accesses, each with its reason. Nothing else in the
// guarded packages may call the file system by path: workspace files are
// reached through the Workspace's os.Root.
var allowedAccess = map[string]struct {
	calls  []string
	reason string
}{
	"capture/workspace.go:NewWorkspace": {[]string{"filepath.EvalSymlinks", "os.OpenRoot"}, "opens the root handle itself"},
	"capture/barrier_linux.go:*":        {[]string{"unix.Uname", "unix.ByteSliceToString", "unix.Fstatfs", "unix.Syncfs", "os.ReadFile"}, "no workspace path: the kernel's release, /proc/meminfo's dirty page count, and fstatfs and syncfs on the root directory opened through the root handle"},
	// The scan's directory descriptors: the root handle's directory, then
	// each subdirectory opened from its parent's by a listed name (no
	// slash, never "." or "..") with O_NOFOLLOW, so none leads out.
	"capture/listdir_linux.go:*": {[]string{"unix.Openat", "unix.Fstat", "unix.Getdents",
		"unix.Close", "unix.FcntlInt", "os.NewFile"}, "descriptor-relative calls on names a listing returned, following nothing"},
	"capture/lstatat_linux64.go:lstatAt":           {[]string{"unix.Syscall6"}, "fstatat of a listed name from its directory's descriptor, following nothing (listdir_linux.go)"},
	"capture/lstatat_linuxother.go:lstatAt":        {[]string{"unix.Fstatat"}, "fstatat of a listed name from its directory's descriptor, following nothing (listdir_linux.go)"},
	"controller/fork.go:*":                         {[]string{"os.Stat", "os.Remove", "os.RemoveAll"}, "session directories in the store"},
	"controller/retention.go:*":                    {[]string{"os.Stat", "os.Chtimes", "os.WriteFile", "os.ReadFile", "os.Remove"}, "the store's session index, retention stamp and quota marker"},
	"controller/locate.go:*":                       {[]string{"os.ReadFile", "os.Stat", "os.MkdirAll", "os.CreateTemp", "os.Rename", "os.Remove"}, "the store's workspace markers and session indexes"},
	"controller/active.go:*":                       {[]string{"os.ReadFile", "os.Stat"}, "the store's active-session hints beside the workspace markers, and whether the store exists"},
	"controller/scan.go:scanAllowedAt":             {[]string{"filepath.EvalSymlinks"}, "resolves the home directory to compare it with the root"},
	"controller/storeperm.go:*":                    {[]string{"os.Stat"}, "the store root's mode"},
	"controller/controller.go:Store.Open":          {[]string{"os.Stat"}, "the session index's identity when opened, in the store"},
	"controller/controller.go:Controller.Replaced": {[]string{"os.Stat"}, "whether the session index in the store is still the one opened"},
	"controller/sessionmeta.go:*":                  {[]string{"os.Stat"}, "a session index in the store: whether it exists"},
	"controller/adopt.go:*":                        {[]string{"os.Stat", "os.Remove"}, "whether the store exists, and discarding a session index in it for an adoption's fork"},
}

// pathCall is a call to the file system by path found in a source file.
type pathCall struct {
	pos  gotoken.Position
	fn   string // enclosing function: "Name" or "Type.Name"; "" at package level
	call string // "os.Remove"
}

// pathCalls returns the calls in f that reach the file system by path: os
// functions other than pathlessOS, the walking and resolving functions of
// path/filepath, anything in io/ioutil, syscall and golang.org/x/sys/unix.
func pathCalls(fset *gotoken.FileSet, f *ast.File) []pathCall {
	pkgs := map[string]string{} // local name -> import path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		pkgs[name] = p
	}
	flagged := func(pkg, fn string) bool {
		switch pkg {
		case "os":
			return !pathlessOS[fn]
		case "path/filepath":
			return pathFilepath[fn]
		case "io/ioutil", "syscall", "golang.org/x/sys/unix":
			return true
		}
		return false
	}
	var out []pathCall
	visit := func(fn string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Obj != nil { // a local variable, not a package
				return true
			}
			if p, ok := pkgs[id.Name]; ok && flagged(p, sel.Sel.Name) {
				out = append(out, pathCall{fset.Position(call.Pos()), fn, id.Name + "." + sel.Sel.Name})
			}
			return true
		})
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			visit("", d)
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			t := fd.Recv.List[0].Type
			if st, ok := t.(*ast.StarExpr); ok {
				t = st.X
			}
			if id, ok := t.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		visit(name, fd)
	}
	return out
}

// allowed reports whether a call in file (e.g. "capture/scan.go") is on
// the allow-list.
func allowed(file string, c pathCall) bool {
	for _, key := range []string{file + ":" + c.fn, file + ":*"} {
		a, ok := allowedAccess[key]
		if !ok {
			continue
		}
		for _, call := range a.calls {
			if call == "*" || call == c.call {
				return true
			}
		}
	}
	return false
}

// TestNoWorkspaceAccessByPath fails when a non-test file of capture/ or
// controller/ reaches the file system by a path outside the allow-list:
// every workspace access must go through the root handle.
func TestNoWorkspaceAccessByPath(t *testing.T) {
	t.Parallel()
	var bad []string
	checked := 0
	for _, dir := range guardedDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		pkg := filepath.Base(filepath.Join(must(os.Getwd()), dir))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := gotoken.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			rel := pkg + "/" + filepath.Base(name)
			for _, c := range pathCalls(fset, f) {
				if !allowed(rel, c) {
					bad = append(bad, fmt.Sprintf("%s:%d: %s in %s", rel, c.pos.Line, c.call, c.fn))
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d files; the package directories moved?", checked)
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("file-system calls by path outside the workspace's root handle (use Workspace methods, or add a store path to allowedAccess with its reason):\n%s", strings.Join(bad, "\n"))
	}
}

// TestPathCallsFindsAccess checks the guard itself on a made-up file: the
// calls it must catch (renamed imports included) and the ones it must not.
func TestPathCallsFindsAccess(t *testing.T) {
	t.Parallel()
	src := `package x

import (
	"os"
	fp "path/filepath"
	"io/ioutil"
	"syscall"
)

func read(root *os.Root, os2 string) {
	os.Remove("a")
	f, _ := os.OpenFile("b", os.O_RDONLY, 0)
	f.Close()
	fp.Walk(".", nil)
	ioutil.ReadFile("c")
	syscall.Unlink("d")
	_ = os.IsNotExist(nil)
	_ = fp.Join("e", "f")
	root.Remove("g")
}

type W struct{}

func (w *W) m() { os.Lstat("h") }

var _ = os.ReadFile
`
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range pathCalls(fset, f) {
		got = append(got, c.fn+" "+c.call)
	}
	want := []string{"read os.Remove", "read os.OpenFile", "read fp.Walk", "read ioutil.ReadFile", "read syscall.Unlink", "W.m os.Lstat"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pathCalls found %q, want %q", got, want)
	}
	if !allowed("capture/workspace.go", pathCall{fn: "NewWorkspace", call: "os.OpenRoot"}) ||
		allowed("capture/workspace.go", pathCall{fn: "Workspace.Stage", call: "os.OpenRoot"}) ||
		allowed("capture/scan.go", pathCall{fn: "Capturer.Scan", call: "os.ReadDir"}) {
		t.Error("the allow-list does not match by file, function and call")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
