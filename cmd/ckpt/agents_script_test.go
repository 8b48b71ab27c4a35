package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestAgentScripts runs testdata/agentscript against the real binary. Each
// script's $WORK gets hooks/AGENT/*.json: the payload fixtures of
// agent/testdata/hooks (see its README for their sources) with @WORK@ replaced
// by the absolute workspace.
func TestAgentScripts(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/agentscript",
		UpdateScripts: os.Getenv("CKPT_UPDATE_SCRIPTS") != "",
		Setup: func(env *testscript.Env) error {
			env.Setenv("CKPT_HOME", env.T().(testing.TB).TempDir())
			return copyFixtures("../../agent/testdata/hooks", filepath.Join(env.WorkDir, "hooks"), env.WorkDir)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonhas": cmdJSONHas,
			"isexec":  cmdIsExec,
			"bgsync":  cmdBgSync,
		},
	})
}

// cmdBgSync waits for the background sync a hook started in the store
// ($CKPT_HOME) to end, checks its log says it was started, and removes
// the log. Negated: no sync was started since (there is no log).
func cmdBgSync(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 {
		ts.Fatalf("usage: bgsync")
	}
	store := ts.Getenv("CKPT_HOME")
	if neg {
		// A hook that starts a sync writes the log's first line before.
		if _, err := os.Stat(filepath.Join(store, hook.SyncLogFile)); err == nil {
			ts.Fatalf("%s exists: a background sync was started", hook.SyncLogFile)
		}
		return
	}
	for try := 0; hook.Running(store, hook.SyncLockFile); try++ {
		if try == 1200 {
			ts.Fatalf("the background sync still runs")
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, err := os.ReadFile(filepath.Join(store, hook.SyncLogFile))
	ts.Check(err)
	if !strings.Contains(string(log), "ckpt [sync]: started in the background") {
		ts.Fatalf("%s does not say a sync started:\n%s", hook.SyncLogFile, log)
	}
	ts.Logf("%s:\n%s", hook.SyncLogFile, log)
	// The next check starts from no log.
	ts.Check(os.Remove(filepath.Join(store, hook.SyncLogFile)))
}

func copyFixtures(from, to, work string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), "@WORK@", work)), 0o644)
	})
}
