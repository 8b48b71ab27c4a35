//go:build !unix

package agenttest_test

import "os/exec"

// ownProcessGroup leaves cmd as it is where there are no Unix process
// groups: its context kills the process itself.
func ownProcessGroup(cmd *exec.Cmd) (killGroup func()) { return func() {} }
