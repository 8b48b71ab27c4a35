//go:build unix

package hook

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// detach makes cmd a process of its own session: it outlives the hook and
// the agent's process group, and no terminal signal reaches it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// TryLock opens path and takes an exclusive flock on it without waiting.
// ok is false (and f nil) when another open file holds it. The lock
// belongs to the open file: a child that inherits f holds it too.
func TryLock(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// execClaude replaces this process with claude (bin, args), on the
// terminal ckpt runs on: Claude Code gets the terminal's signals to
// itself, with no ckpt waiting behind it. It returns only on failure.
func execClaude(bin string, args []string) error {
	return syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
}
