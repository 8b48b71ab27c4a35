//go:build !unix

package hook

import (
	"os"
	"os/exec"
)

// detach: the child is started as it is (Windows does not tie it to the
// hook's console once the hook exits).
func detach(cmd *exec.Cmd) {}

// TryLock opens path. Without flock, every call gets it: concurrent
// hooks may start more than one child, and `ckpt sync` itself refuses to
// run twice at once.
func TryLock(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	return f, err == nil, err
}

// execClaude runs claude (bin, args) on this terminal and waits for it:
// a process cannot replace itself here.
func execClaude(bin string, args []string) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}
