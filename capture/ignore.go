// Ignore rules for Scan. The matcher in this file and in ignore_pattern.go
// was written here from the documented behaviour of gitignore(5) and the
// fnmatch(3)/glob(7) pattern language, and is checked against the real
// `git check-ignore` by the differential tests in ignore_test.go.
//
// What ckpt adds to git's rules, and where it departs from them, is listed
// in docs/scan.md ("Ignore rules: known differences from git").

package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
)

const (
	gitignoreName  = ".gitignore"
	ckptignoreName = ".ckptignore"

	// maxRuleFileSize is the size from which a rule file is skipped, as git
	// skips one.
	maxRuleFileSize = 100 << 20
)

// defaultIgnoredDirs are the dependency and cache directories ignored out
// of the box: each acts as a rule "name/" at the top of .ckptignore.
var defaultIgnoredDirs = []string{
	"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
	".pytest_cache", ".cache", "dist", "build", "target",
}

// DefaultIgnoredDirs returns the directory names ignored unless the root
// .ckptignore brings them back with "!name/".
func DefaultIgnoredDirs() []string { return slices.Clone(defaultIgnoredDirs) }

// builtinSource names the rules that come with ckpt rather than a file.
const builtinSource = "built-in"

// Ignore decides which workspace paths Scan leaves out: the .gitignore
// file of every directory (a deeper file's last matching rule wins over a
// shallower one), then the root .ckptignore, which has the last word over
// every .gitignore and starts with DefaultIgnoredDirs. A path inside an
// ignored directory is ignored whatever later rules say, and a path with
// a version-control directory name (.git, .hg, .svn, .jj, .bzr, in any
// letter case) as any element is always ignored.
//
// Rule files are read lazily, the first time a path below their directory
// is matched, and then cached. Nothing is read inside an ignored directory,
// through a symlinked or missing directory, or from a rule file that is a
// symlink, not a regular file, or 100 MiB or more. An Ignore is safe for
// concurrent use.
type Ignore struct {
	root string
	// ws is what every rule file is read through: the workspace's root
	// handle, one element at a time, following no link (Workspace.Ignore),
	// or a Workspace opened at the first read (NewIgnore).
	ws    *Workspace
	wsErr error
	once  sync.Once
	// read returns the content of the rule file at the workspace-relative
	// path rel, nil for none; tests replace it.
	read func(rel string) ([]byte, error)

	mu   sync.RWMutex
	last []*ruleFile // .ckptignore then the built-in defaults; nil until loaded
	dirs map[string]*ignoreDir
}

// ignoreDir is what Ignore knows of one directory.
type ignoreDir struct {
	rel    string // "" for the root
	parent *ignoreDir
	// verdict decides the directory itself: the rule that ignores it or one
	// of its ancestors, or nil. An ignored directory's rules are not read.
	verdict *rule
	real    bool      // a directory reached through real directories only
	rules   *ruleFile // its .gitignore; nil for none
	// fileRules says a rule that applies to the directory's files can
	// match a file: one of .ckptignore, the defaults, its .gitignore and
	// its ancestors' has a rule that is not "pattern/".
	fileRules bool
}

// NewIgnore returns the ignore rules of the workspace whose absolute root
// is root. Nothing is read until the first Match.
func NewIgnore(root string) *Ignore {
	m := &Ignore{root: root, dirs: make(map[string]*ignoreDir)}
	m.read = m.readRuleFile
	return m
}

// Ignore returns the workspace's ignore rules, read through its root
// handle. Nothing is read until the first Match.
func (w *Workspace) Ignore() *Ignore {
	m := NewIgnore(w.root)
	m.ws = w
	m.once.Do(func() {})
	return m
}

// handle returns the workspace rule files are read through, opening it on
// first use for an Ignore made by NewIgnore.
func (m *Ignore) handle() (*Workspace, error) {
	m.once.Do(func() {
		if m.ws == nil {
			m.ws, m.wsErr = NewWorkspace(m.root)
		}
	})
	return m.ws, m.wsErr
}

// noRules reports whether err means there is no rule file (or no real
// directory) to read at a path: missing, a symlink or other non-regular
// entry on the way or at the end (swapped in by a race included), or a name
// that cannot exist.
func noRules(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotRegular) ||
		errors.Is(err, ErrVCSDir) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG) || isLoop(err)
}

// Match reports whether the canonical workspace-relative path rel (slash
// separated, no "." or ".." elements) is ignored; isDir says whether it is
// a directory. It fails for a path that is not canonical and when a rule
// file that applies cannot be read (an unreadable rule file is never taken
// as absent; the failure is not cached).
func (m *Ignore) Match(rel string, isDir bool) (bool, error) {
	r, err := m.decide(rel, isDir)
	if err != nil {
		return false, err
	}
	return r.excludes(), nil
}

// decide returns the rule that decides rel, or nil when none matches.
func (m *Ignore) decide(rel string, isDir bool) (*rule, error) {
	if !canonicalRel(rel) {
		return nil, fmt.Errorf("capture: ignore: %q is not a canonical workspace-relative path", rel)
	}
	for name := range strings.SplitSeq(rel, "/") {
		if isVCSName(name) {
			return vcsRule(name), nil
		}
	}
	parentRel := ""
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parentRel = rel[:i]
	}
	parent, err := m.dir(parentRel)
	if err != nil {
		return nil, err
	}
	if parent.verdict.excludes() {
		return parent.verdict, nil
	}
	return m.matchRules(parent, rel, isDir), nil
}

// matchRules returns the rule deciding rel from the rule files that apply
// to it: .ckptignore and the defaults first, then the .gitignore files of
// dir (rel's parent) and of its ancestors, deepest first.
func (m *Ignore) matchRules(dir *ignoreDir, rel string, isDir bool) *rule {
	if !isDir && !dir.fileRules {
		return nil // every rule that applies is for directories only
	}
	for _, f := range m.last {
		if r := f.match(rel, isDir); r != nil {
			return r
		}
	}
	for d := dir; d != nil; d = d.parent {
		if d.rules == nil {
			continue
		}
		sub := rel
		if d.rel != "" {
			sub = rel[len(d.rel)+1:]
		}
		if r := d.rules.match(sub, isDir); r != nil {
			return r
		}
	}
	return nil
}

// dir returns what is known of the directory rel ("" for the root),
// reading the rule files on the way that are not read yet.
func (m *Ignore) dir(rel string) (*ignoreDir, error) {
	m.mu.RLock()
	d := m.dirs[rel]
	m.mu.RUnlock()
	if d != nil {
		return d, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadDir(rel, nil)
}

// dirRules is what a walker holding a directory open found there: that it
// is a real directory (it was opened through real directories, following
// no link) and its .gitignore rules, nil for none. It spares loadDir the
// walk from the root that would find out the same.
type dirRules func() (*ruleFile, error)

// enterDir is dir for a walker that holds rel open: rules, called at most
// once and only when rel's rules apply (rel and its ancestors are not
// ignored), stands in for reading rel's .gitignore through the root
// handle. A failure is not cached.
func (m *Ignore) enterDir(rel string, rules dirRules) (*ignoreDir, error) {
	m.mu.RLock()
	d := m.dirs[rel]
	m.mu.RUnlock()
	if d != nil {
		return d, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadDir(rel, rules)
}

// loadDir is dir with m.mu held for writing; probe, if not nil, answers
// for rel itself (see enterDir).
func (m *Ignore) loadDir(rel string, probe dirRules) (*ignoreDir, error) {
	if d := m.dirs[rel]; d != nil {
		return d, nil
	}
	if rel == "" {
		return m.loadRoot()
	}
	parentRel, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parentRel, name = rel[:i], rel[i+1:]
	}
	parent, err := m.loadDir(parentRel, nil)
	if err != nil {
		return nil, err
	}
	d := &ignoreDir{rel: rel, parent: parent}
	switch {
	case parent.verdict.excludes():
		d.verdict = parent.verdict
	case isVCSName(name):
		d.verdict = vcsRule(name)
	default:
		d.verdict = m.matchRules(parent, rel, true)
	}
	if !d.verdict.excludes() && parent.real && probe != nil {
		d.real = true
		if d.rules, err = probe(); err != nil {
			return nil, err
		}
	} else if !d.verdict.excludes() && parent.real {
		if d.real, err = m.isRealDir(rel); err != nil {
			return nil, err
		}
		if d.real {
			if d.rules, err = m.readRules(rel + "/" + gitignoreName); err != nil {
				return nil, err
			}
		}
	}
	d.fileRules = parent.fileRules || d.rules != nil && d.rules.fileRules
	m.dirs[rel] = d
	return d, nil
}

// loadRoot reads the root's .ckptignore and .gitignore, with m.mu held.
func (m *Ignore) loadRoot() (*ignoreDir, error) {
	ckpt, err := m.readRules(ckptignoreName)
	if err != nil {
		return nil, err
	}
	git, err := m.readRules(gitignoreName)
	if err != nil {
		return nil, err
	}
	m.last = nil
	if ckpt != nil {
		m.last = append(m.last, ckpt)
	}
	m.last = append(m.last, defaultRules())
	d := &ignoreDir{real: true, rules: git, fileRules: git != nil && git.fileRules}
	for _, f := range m.last {
		d.fileRules = d.fileRules || f.fileRules
	}
	m.dirs[""] = d
	return d, nil
}

// isRealDir reports whether rel is a directory and not a symlink; a
// missing path, or one whose name cannot exist, is not.
func (m *Ignore) isRealDir(rel string) (bool, error) {
	w, err := m.handle()
	if err != nil {
		return false, fmt.Errorf("capture: ignore rules: %w", err)
	}
	d, err := w.openRealDir(rel)
	if err != nil {
		if noRules(err) {
			return false, nil
		}
		return false, fmt.Errorf("capture: ignore rules: %w", err)
	}
	d.close()
	return true, nil
}

// readRules reads and parses the rule file at rel, nil for none.
func (m *Ignore) readRules(rel string) (*ruleFile, error) {
	data, err := m.read(rel)
	if err != nil {
		return nil, fmt.Errorf("capture: read ignore rules %s: %w", rel, err)
	}
	if data == nil {
		return nil, nil
	}
	return parseRules(data, rel), nil
}

// readRuleFile returns the content of the rule file at rel, or nil when
// there is none to read: missing, a symlink, not a regular file (a FIFO is
// never opened for a blocking read), or maxRuleFileSize or more.
func (m *Ignore) readRuleFile(rel string) ([]byte, error) {
	w, err := m.handle()
	if err != nil {
		return nil, err
	}
	f, fi, err := w.OpenFile(rel)
	if err != nil {
		if noRules(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	return readRuleData(f, fi)
}

// readRuleData reads the open rule file f (fi: its stat): nil when it is
// maxRuleFileSize or more, or grows to that while read.
func readRuleData(f *os.File, fi fs.FileInfo) ([]byte, error) {
	if fi.Size() >= maxRuleFileSize {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRuleFileSize))
	if err != nil {
		return nil, err
	}
	if len(data) >= maxRuleFileSize {
		return nil, nil // grew while read
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// canonicalRel reports whether rel is a canonical workspace-relative path:
// not empty, slash separated, no empty, "." or ".." element, no NUL.
func canonicalRel(rel string) bool {
	if rel == "" || strings.IndexByte(rel, 0) >= 0 {
		return false
	}
	for name := range strings.SplitSeq(rel, "/") {
		if name == "" || name == "." || name == ".." {
			return false
		}
	}
	return true
}

// vcsRule is the built-in rule that ignores a version-control name.
func vcsRule(name string) *rule {
	return &rule{source: builtinSource, text: name}
}

// defaultRules returns the built-in directory rules, consulted after the
// root .ckptignore, as if they were its first lines. They are parsed on
// first use, not at start-up: most ckpt processes never match ignore rules.
var defaultRules = sync.OnceValue(func() *ruleFile {
	var b strings.Builder
	for _, name := range defaultIgnoredDirs {
		b.WriteString(name + "/\n")
	}
	return parseRules([]byte(b.String()), builtinSource)
})
