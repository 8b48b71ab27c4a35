package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/loopback"
	"github.com/ckpt/ckpt/internal/msg"
)

// File is what an install or uninstall did to one configuration path of
// one agent: the entries it added and removed (none: nothing changed).
type File struct {
	// Agent is the agent's name.
	Agent    string   `json:"agent,omitempty"`
	Settings string   `json:"settings"`
	Changed  bool     `json:"changed"`
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	// Scan is the workspace's scan mode after an install: "on", "off"
	// (NoScan, User) or "refused" (a home directory or a filesystem
	// root).
	Scan string `json:"scan,omitempty"`
	// Install says the change was an install's.
	Install bool `json:"-"`
	// Note, for people, is what the install did to the workspace's scan
	// mode, said once after the first file it changed.
	Note string `json:"-"`
	// Then sums the file up for people once its entries are listed:
	// "updated" (the file holds other things too), "removed" (the file is
	// gone) or "" (every entry is a file of its own: nothing to add).
	Then string `json:"-"`
}

// Report is what Install or Uninstall did.
type Report struct {
	// Agents are the agents installed or uninstalled, once each.
	Agents []string
	// Found are the agents Install found, when none was named.
	Found []agent.Found
	// Files are the configuration paths each agent's install or
	// uninstall touched, in order.
	Files []File
	// RemovedDirs are the directories install had created that
	// Uninstall removed, now empty.
	RemovedDirs []string
	// ScanRestored, after Uninstall, is the scan mode the workspace went
	// back to once no agent's hooks were left in it: "off" or "unset"
	// ("" when it was left as it is).
	ScanRestored string
	// Workspace is the workspace's root (for messages).
	Workspace string
}

// Install installs the hooks of each named agent (none: each agent
// agent.Detect finds, listed in Report.Found) and, unless NoScan or User,
// turns the workspace's scan mode on. With several agents, an error
// names the agent it is about; the Report holds what was done before it.
func Install(ctx context.Context, names []string, o Options) (*Report, error) {
	r := &Report{Workspace: o.Workspace}
	if len(names) == 0 {
		r.Found = agent.Detect(o.Workspace)
		if len(r.Found) == 0 {
			return r, ErrNoAgent
		}
		for _, f := range r.Found {
			names = append(names, f.Agent)
		}
	}
	if err := known(names); err != nil {
		return r, err
	}
	unlock, err := o.lock()
	if err != nil {
		return r, err
	}
	defer unlock()
	scan, note, err := o.installScan()
	if err != nil {
		return r, err
	}
	return r, r.eachAgent(names, func(name string) error {
		first := len(r.Files)
		if err := o.installAgent(r, name, true); err != nil {
			return err
		}
		for i := first; i < len(r.Files); i++ {
			r.Files[i].Scan = scan
			if note != "" {
				r.Files[i].Note, r.Files[i].Changed = note, true
				note = "" // said once
			}
		}
		if n := agent.SubdirNote(Named(name), o.Workspace); n != "" && !o.User {
			o.say("ckpt: note: %s", n)
		}
		return nil
	})
}

// Uninstall removes the hooks of each named agent, then the directories
// install created that are now empty; once no agent's hooks are left in
// the workspace (not with User), its scan mode goes back to what it was
// before install turned it on.
func Uninstall(ctx context.Context, names []string, o Options) (*Report, error) {
	r := &Report{Workspace: o.Workspace}
	if err := known(names); err != nil {
		return r, err
	}
	unlock, err := o.lock()
	if err != nil {
		return r, err
	}
	defer unlock()
	if err := r.eachAgent(names, func(name string) error { return o.installAgent(r, name, false) }); err != nil {
		return r, err
	}
	// What install made around the hooks: the directories it created,
	// now empty, and the workspace's scan mode.
	root := o.Workspace
	if o.User {
		if root, err = os.UserHomeDir(); err != nil {
			return r, err
		}
	}
	r.RemovedDirs = o.removeInstallDirs(root)
	if o.User {
		return r, nil
	}
	r.ScanRestored, err = o.restoreScan()
	return r, err
}

// known checks that every name is an agent's.
func known(names []string) error {
	for _, n := range names {
		if Named(n) == nil {
			return fmt.Errorf("%q: no such agent (%s)", n, strings.Join(agent.Names(), ", "))
		}
	}
	return nil
}

// eachAgent runs do for each of names, once each (r.Agents); with
// several, an error names the agent.
func (r *Report) eachAgent(names []string, do func(name string) error) error {
	for _, n := range names {
		if !slices.Contains(r.Agents, n) {
			r.Agents = append(r.Agents, n)
		}
	}
	for _, n := range r.Agents {
		if err := do(n); err != nil {
			if len(r.Agents) > 1 {
				return fmt.Errorf("%s: %w", n, err)
			}
			return err
		}
	}
	return nil
}

// installAgent installs (or uninstalls) the hooks of the agent named
// name, adding what it changed to r. For an agent with http hooks, HTTP
// first configures the hook server and gives the install its token; the
// hook server starts after, and an uninstall drops the token (stopping
// the server when no install uses it).
func (o *Options) installAgent(r *Report, name string, install bool) error {
	ag := Named(name)
	env := o.env(func(c agent.Change) error {
		r.Files = append(r.Files, changed(name, c))
		return nil
	})
	_, http := ag.(agent.HTTPHooks)
	if http && install && o.HTTP {
		addr, token, err := o.hookServer()
		if err != nil {
			return err
		}
		env.HTTP = &agent.HookServer{Addr: addr, Token: token}
	}
	if err := ag.Install(env, install); err != nil {
		return err
	}
	if http && install && o.HTTP {
		if p := hook.EnsureServer(o.Store, o.exe(), ""); p != "" {
			o.say("ckpt: warning: %s", p)
		}
	}
	if http && !install {
		// The hooks are gone: so is their token.
		if root, err := o.hookRoot(); err == nil {
			if err := hook.DropToken(o.Store, root); err != nil {
				o.say("ckpt: warning: hook server configuration: %s", msg.OneLine(err))
			}
			if cfg, ok, err := hook.LoadConfig(o.Store); err == nil && ok && len(cfg.Tokens) == 0 {
				hook.StopServer(o.Store, cfg)
			}
		}
	}
	return nil
}

// changed is the File of c, an agent's report of one path.
func changed(name string, c agent.Change) File {
	f := File{Agent: name, Settings: c.Path, Install: c.Install, Changed: len(c.Added)+len(c.Removed) > 0,
		Added: c.Added, Removed: c.Removed}
	if f.Added == nil {
		f.Added = []string{}
	}
	if f.Removed == nil {
		f.Removed = []string{}
	}
	if !f.Changed {
		return f
	}
	files := true // every entry a file under the path (agent's own files)
	for _, e := range append(slices.Clone(c.Added), c.Removed...) {
		files = files && (e == c.Path || strings.HasPrefix(e, c.Path+string(filepath.Separator)))
	}
	switch _, err := os.Lstat(c.Path); {
	case files:
	case err != nil && !c.Install:
		f.Then = "removed"
	default:
		f.Then = "updated"
	}
	return f
}

// installScan turns scan mode on for the workspace, the default every
// session of it inherits (sessions of any agent, new ones included), so a
// code rewind also undoes what the agent did through its shell. Not with
// NoScan, nor with User (hooks for every project; scan mode is per
// workspace). A workspace too big for the scan budget turns it off again
// at its first prompt, with one warning (Store.WorkspaceScan). It
// returns the scan mode after, and what to tell the user ("" when
// nothing changed).
func (o *Options) installScan() (scan, note string, err error) {
	if o.User {
		return "off", "", nil
	}
	root, err := controller.WorkspaceRoot(o.Workspace)
	if err != nil {
		return "", "", err
	}
	st := controller.OpenStore(o.Store)
	if o.NoScan {
		// The workspace is known all the same (no scan default set):
		// hooks from an agent started below it record into its session.
		_, err := st.WorkspaceScan(root, "none")
		return "off", "", err
	}
	before, err := st.WorkspaceScan(root, "")
	if err != nil {
		return "", "", err
	}
	if before == "on" {
		return "on", "", nil
	}
	if before == "" {
		before = "unset"
	}
	_, err = st.WorkspaceScan(root, "on")
	if errors.Is(err, controller.ErrScanRefused) {
		return "refused", fmt.Sprintf("scan mode stays off: %s is a home directory or a filesystem root; edit-tool captures only", root), nil
	}
	if err != nil {
		return "", "", err
	}
	if err := o.editInstallScan(func(m map[string]string) {
		if _, ok := m[root]; !ok {
			m[root] = before
		}
	}); err != nil {
		return "", "", err
	}
	return "on", fmt.Sprintf("scan mode on for %s: each prompt records the workspace, so a rewind also undoes shell edits (install --no-scan leaves it off)", root), nil
}

// installScanFile, in the store, holds the scan mode each workspace had
// before an install turned it on ("unset" or "off"), for uninstall to put
// back.
const installScanFile = "install-scan.json"

// editInstallScan changes the record of installScanFile.
func (o *Options) editInstallScan(edit func(map[string]string)) error {
	path := filepath.Join(o.Store, installScanFile)
	m := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &m)
	}
	edit(m)
	if len(m) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// restoreScan puts back the workspace's scan mode as it was before an
// install turned it on, once no agent's hooks are left in the workspace
// (Installed), and returns what it went back to ("" when it was left as
// it is).
func (o *Options) restoreScan() (string, error) {
	root, err := controller.WorkspaceRoot(o.Workspace)
	if err != nil {
		return "", err
	}
	if len(Installed(o.Workspace)) > 0 {
		return "", nil
	}
	var before string
	if err := o.editInstallScan(func(m map[string]string) {
		before = m[root]
		delete(m, root)
	}); err != nil || before == "" {
		return "", err
	}
	st := controller.OpenStore(o.Store)
	if now, err := st.WorkspaceScan(root, ""); err != nil || now != "on" {
		return "", err // changed since: left as it is
	}
	to := "none"
	if before == "off" {
		to = "off"
	}
	if _, err := st.WorkspaceScan(root, to); err != nil {
		return "", err
	}
	return before, nil
}

// hookRoot is the directory an http install's token is good for: the
// workspace, or the home directory with User.
func (o *Options) hookRoot() (string, error) {
	dir := o.Workspace
	if o.User {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home directory: %w", err)
		}
		dir = home
	}
	root, err := controller.WorkspaceRoot(dir)
	if err == nil && filepath.Dir(root) == root {
		return "", fmt.Errorf("%s is the filesystem root: %w", root, ErrRootToken)
	}
	return root, err
}

// hookServer configures the store's hook server for an http install and
// returns its address and this install's token: Addr when given, else
// the address it has, else a free port. A server still listening at the
// old address is stopped, so the one the hooks start next listens at the
// new one.
func (o *Options) hookServer() (addr, token string, err error) {
	cur, had, err := hook.LoadConfig(o.Store)
	if err != nil && !errors.Is(err, hook.ErrOldConfig) {
		return "", "", err
	}
	addr = o.Addr
	if addr == "" && had {
		addr = cur.Addr
	}
	if addr == "" {
		// A store new to http hooks, or one an older ckpt set up (whose
		// server may still hold its port).
		if addr, err = hook.FreePort(); err != nil {
			return "", "", err
		}
	}
	if had && addr != cur.Addr {
		defer hook.StopServer(o.Store, cur)
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || port == "0" || !loopback.Host(host) {
		return "", "", fmt.Errorf("hook server address %q: want a loopback HOST:PORT with a fixed port", addr)
	}
	root, err := o.hookRoot()
	if err != nil {
		return "", "", err
	}
	_, token, err = hook.Configure(o.Store, addr, root, o.User)
	return addr, token, err
}
