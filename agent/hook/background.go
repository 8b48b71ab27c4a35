package hook

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Work a hook starts and does not wait for: a background `ckpt sync` when
// the agent stops (issue 16), and the resident hook server when it is not
// running (`ckpt install claude --http`). Each is a detached process of
// the ckpt executable, one at a time per store: the hook takes a lock
// file without waiting and hands its open descriptor to the child, which
// holds the lock until it exits; a hook that finds the lock taken starts
// nothing. The child's output goes to a log file in the store. Nothing
// here ever fails or delays the hook beyond starting a process.
const (
	// SyncLockFile and SyncLogFile, in the store, are the background
	// `ckpt sync`'s lock and log.
	SyncLockFile = "sync-bg.lock"
	SyncLogFile  = "sync.log"
	// ServerLockFile and ServerLogFile, in the store, are the resident
	// hook server's (`ckpt serve --hooks`) lock and log.
	ServerLockFile = "hook-server.lock"
	ServerLogFile  = "hook-server.log"
	// maxBgLog bounds a log file: past it, the old log becomes NAME.1.
	maxBgLog = 1 << 20
)

// StartDetached starts exe, the ckpt executable, with args (after --store
// STORE) as a detached process holding the store's lock file lockName,
// its output appended to logName in the store, unless the lock is held (a
// process started this way still runs). It does not wait for the
// process. On Linux the process starts with detachedTimerSlack.
func StartDetached(store, exe, lockName, logName string, args ...string) error {
	if err := os.MkdirAll(store, 0o700); err != nil {
		return err
	}
	held, ok, err := TryLock(filepath.Join(store, lockName))
	if err != nil {
		return err
	}
	if !ok {
		return nil // one runs already
	}
	// The child inherits the locked descriptor: the lock is held until
	// the child exits, whatever this process does.
	defer held.Close()
	logPath := filepath.Join(store, logName)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxBgLog {
		os.Rename(logPath, logPath+".1")
	}
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "%s ckpt %v: started in the background\n", time.Now().UTC().Format(time.RFC3339), args)
	cmd := exec.Command(exe, append([]string{"--store", store}, args...)...)
	cmd.Dir = store // not the workspace: it may go away while the child runs
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{held}
	detach(cmd)
	if err := start(cmd); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// Running reports whether a process StartDetached started with lockName
// still runs.
func Running(store, lockName string) bool {
	f, ok, err := TryLock(filepath.Join(store, lockName))
	if err != nil {
		return false
	}
	f.Close() // releases the lock this took, if any
	return !ok
}
