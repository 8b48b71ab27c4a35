//go:build !linux

package hook

import "os/exec"

// start starts cmd (the timer slack of timerslack_linux.go is Linux's).
func start(cmd *exec.Cmd) error { return cmd.Start() }
