package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/paths"
)

// agentNamed returns the agent of `ckpt install|uninstall NAME`, or
// nil.
func agentNamed(name string) agent.Agent {
	if ag, ok := agent.Lookup(name); ok && slices.Contains(agent.Names(), name) {
		return ag
	}
	return nil
}

// agentEnv is what an agent's Install or Check works with in this
// process: the workspace, how hooks name this binary, and where messages
// go. The workspace must be located.
func (a *app) agentEnv(o installOptions) *agent.Env {
	return &agent.Env{
		Workspace:  a.workspace,
		User:       o.user,
		Strict:     o.strict,
		Command:    selfCommand(),
		Exe:        selfPath(),
		StatusLine: o.statusLine,
		Mkdir:      a.mkdirForInstall,
		Report:     func(c agent.Change) error { return a.reportInstall(c.Path, c.Install, c.Added, c.Removed) },
		Say:        a.say,
	}
}

// runCheck is `ckpt install --check [AGENT]`: each named agent's check
// (every agent that has one, when none is named). It changes nothing.
func (a *app) runCheck(args []string) error {
	var list []agent.Checker
	var have []string
	for _, ag := range agent.All() {
		if c, ok := ag.(agent.Checker); ok {
			have = append(have, ag.Name())
			if len(args) == 0 || args[0] == ag.Name() {
				list = append(list, c)
			}
		}
	}
	if len(list) == 0 {
		return usagef("install --check checks %s", strings.Join(have, ", "))
	}
	if err := a.locate(context.Background()); err != nil {
		return err
	}
	for _, c := range list {
		r, err := c.Check(a.agentEnv(installOptions{}))
		if err != nil {
			return err
		}
		if a.json {
			if err := a.printJSON(r.JSON); err != nil {
				return err
			}
			continue
		}
		for _, l := range r.Lines {
			fmt.Fprintln(a.stdout, l)
		}
	}
	return nil
}

// installDirsFile, in the store, lists the directories `ckpt install`
// created for agents' configuration, so that uninstall removes those it
// leaves empty, and only those.
const installDirsFile = "install-dirs.json"

// mkdirForInstall creates dir and its missing parents, recording in the
// store the ones it created.
func (a *app) mkdirForInstall(dir string) error {
	// Only directories below the workspace or the home directory are
	// recorded, never those themselves (nor what holds them).
	home, _ := os.UserHomeDir()
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d || d == home || d == a.workspace {
			break
		}
		made = append(made, d)
	}
	if !paths.Within(a.workspace, dir) && (home == "" || !paths.Within(home, dir)) {
		made = nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if len(made) == 0 || a.store == "" {
		return nil
	}
	dirs := readInstallDirs(a.store)
	for _, d := range made {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return writeInstallDirs(a.store, dirs)
}

func readInstallDirs(store string) []string {
	var dirs []string
	if b, err := os.ReadFile(filepath.Join(store, installDirsFile)); err == nil {
		json.Unmarshal(b, &dirs)
	}
	return dirs
}

func writeInstallDirs(store string, dirs []string) error {
	if len(dirs) == 0 {
		if err := os.Remove(filepath.Join(store, installDirsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(dirs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(store, installDirsFile), append(b, '\n'), 0o600)
}

// removeInstallDirs removes the directories install created under root
// (the workspace, or the home directory for --user) that are now empty,
// deepest first, and returns them; a directory that holds anything stays,
// and stays recorded, as do those elsewhere.
func (a *app) removeInstallDirs(root string) []string {
	dirs := readInstallDirs(a.store)
	if len(dirs) == 0 {
		return nil
	}
	// Deepest first: a parent empties once its children go.
	slices.SortFunc(dirs, func(x, y string) int { return len(y) - len(x) })
	var kept, removed []string
	for _, d := range dirs {
		if !paths.Within(root, d) {
			kept = append(kept, d)
			continue
		}
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.IsDir() && os.Remove(d) == nil {
			removed = append(removed, d)
			continue
		}
		kept = append(kept, d)
	}
	if err := writeInstallDirs(a.store, kept); err != nil {
		a.say("ckpt: warning: %s: %s", installDirsFile, oneLine(err))
	}
	return removed
}
