package hook

import (
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// detachedTimerSlack is the timer slack a detached process starts with:
// how late the kernel may end the process's timed sleeps, so as to wake it
// for several at once (the default is 50 µs). Go's runtime monitor thread
// sleeps 20 µs at a time while the process works, for at least a
// millisecond after the first system call that follows idling: in the
// hook server, which idles between events, it woke ~40 times per event,
// 20% of the server's CPU, and it wakes about once a millisecond with
// this slack (issue 27). Nothing a detached process waits on is timed that
// closely: the hook server's timers are its idle sweep and its HTTP
// timeouts.
const detachedTimerSlack = time.Millisecond

// start starts cmd with detachedTimerSlack, from a thread of this process
// that has it while it forks: a child takes its timer slack from the
// thread that forks it and keeps it across exec, and the Go runtime starts
// the child's monitor thread before any code of the child could set it.
// The thread gets its own slack back before it runs anything else.
func start(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || time.Duration(old) >= detachedTimerSlack ||
		unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(detachedTimerSlack), 0, 0, 0) != nil {
		runtime.UnlockOSThread()
		return cmd.Start()
	}
	err = cmd.Start()
	if unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0) == nil {
		runtime.UnlockOSThread()
	} // else the thread stays this goroutine's, and ends with it
	return err
}
