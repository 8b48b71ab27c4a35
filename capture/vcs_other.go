//go:build !windows

package capture

// windowsNames is false: only case variants of the VCS names are refused
// here (macOS's default file system ignores case).
const windowsNames = false
