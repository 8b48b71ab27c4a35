//go:build !unix

package capture

const oNoFollow = 0

const oNonblock = 0

func isLoop(error) bool { return false }
