//go:build unix

package capture

import "syscall"

// oNonBlock keeps opening a FIFO that replaced a rule file from blocking.
const oNonBlock = syscall.O_NONBLOCK
