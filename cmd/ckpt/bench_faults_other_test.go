//go:build !unix

package main

import "os"

// minorFaults is not known here.
func minorFaults(*os.ProcessState) (int64, bool) { return 0, false }
