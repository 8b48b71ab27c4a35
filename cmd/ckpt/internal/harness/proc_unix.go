//go:build unix

package harness

import (
	"os/exec"
	"syscall"
)

// OwnProcessGroup starts cmd in a process group of its own, killed whole
// when cmd's context is done; the returned func kills what is left of the
// group once cmd has ended (an agent's helpers, a shell it started).
func OwnProcessGroup(cmd *exec.Cmd) (killGroup func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}
