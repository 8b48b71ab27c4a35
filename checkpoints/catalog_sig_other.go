//go:build !unix

package checkpoints

import "os"

// statSig is fi's signature where no inode or ctime is at hand: size and
// mtime (the catalog's margin still rules out a recent write).
func statSig(fi os.FileInfo) fileSig {
	m := modTime(fi)
	return fileSig{exists: true, regular: fi.Mode().IsRegular(), size: fi.Size(), mtime: m, ctime: m}
}
