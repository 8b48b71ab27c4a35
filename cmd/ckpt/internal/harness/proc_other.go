//go:build !unix

package harness

import "os/exec"

// OwnProcessGroup leaves cmd as it is where there are no Unix process
// groups: its context kills the process itself.
func OwnProcessGroup(cmd *exec.Cmd) (killGroup func()) { return func() {} }
