//go:build !unix

package capture

const oNonblock = 0

func isLoop(error) bool { return false }
