//go:build !linux

package capture

import "io/fs"

// statSeesCTime: statKey does not read ctime here (see CommitIf).
const statSeesCTime = false

// statKey falls back to the modification time where ctime and inode are
// not read; the racy rule still re-reads recently changed files.
func statKey(fi fs.FileInfo) (mtime, ctime int64, inode uint64) {
	t := fi.ModTime().UnixNano()
	return t, t, 0
}
