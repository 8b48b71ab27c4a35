package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ckpt/ckpt/remote"
)

// Work a hook starts and does not wait for: a background `ckpt sync` when
// the agent stops (issue 16), and the resident hook server when it is not
// running (`ckpt install claude --http`). Each is a detached process of
// this binary, one at a time per store: the hook takes a lock file without
// waiting and hands its open descriptor to the child, which holds the lock
// until it exits; a hook that finds the lock taken starts nothing. The
// child's output goes to a log file in the store. Nothing here ever fails
// or delays the hook beyond starting a process.
const (
	syncLockFile   = "sync-bg.lock"
	syncLogFile    = "sync.log"
	serverLockFile = "hook-server.lock"
	serverLogFile  = "hook-server.log"
	// maxBgLog bounds a log file: past it, the old log becomes NAME.1.
	maxBgLog = 1 << 20
)

// selfExe is the binary a hook starts (a variable for tests, whose own
// binary is not ckpt).
var selfExe = os.Executable

// startSync starts `ckpt sync` in the background when the store has a
// remote and no background sync of it is running. No remote configured:
// nothing happens.
func (a *app) startSync() {
	if _, err := remote.LoadConfig(a.store); err != nil {
		if !errors.Is(err, remote.ErrNoRemote) {
			a.say("ckpt: hook: warning: remote: %s; not syncing", oneLine(err))
		}
		return
	}
	if err := a.startDetached(syncLockFile, syncLogFile, "sync"); err != nil {
		a.say("ckpt: hook: warning: background sync: %s", oneLine(err))
	}
}

// startDetached starts this binary with args (after --store STORE) as a
// detached process holding the store's lock file lockName, its output
// appended to logName in the store, unless the lock is held (a process
// started this way still runs). It does not wait for the process.
func (a *app) startDetached(lockName, logName string, args ...string) error {
	bin, err := selfExe()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.store, 0o700); err != nil {
		return err
	}
	held, ok, err := tryLockFile(filepath.Join(a.store, lockName))
	if err != nil {
		return err
	}
	if !ok {
		return nil // one runs already
	}
	// The child inherits the locked descriptor: the lock is held until
	// the child exits, whatever this process does.
	defer held.Close()
	logPath := filepath.Join(a.store, logName)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxBgLog {
		os.Rename(logPath, logPath+".1")
	}
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "%s ckpt %v: started in the background\n", time.Now().UTC().Format(time.RFC3339), args)
	cmd := exec.Command(bin, append([]string{"--store", a.store}, args...)...)
	cmd.Dir = a.store // not the workspace: it may go away while the child runs
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{held}
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// bgRunning reports whether a process started with lockName still runs.
func bgRunning(store, lockName string) bool {
	f, ok, err := tryLockFile(filepath.Join(store, lockName))
	if err != nil {
		return false
	}
	f.Close() // releases the lock this took, if any
	return !ok
}
