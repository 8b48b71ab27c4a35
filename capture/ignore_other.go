//go:build !unix

package capture

const oNonBlock = 0
