package checkpoints

import (
	"golang.org/x/sys/unix"
)

// indexSigs returns the signature of each session's index: fstatat
// relative to the sessions directory, so the kernel walks two path
// components per file rather than the whole store path.
func indexSigs(sessions string, ids []string) []sigs {
	fd, err := unix.Open(sessions, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return indexSigsEach(sessions, ids)
	}
	defer unix.Close(fd)
	out := make([]sigs, len(ids))
	parallel(len(ids), func(i int) {
		for k, name := range []string{FileName, FileName + "-wal"} {
			var st unix.Stat_t
			if unix.Fstatat(fd, ids[i]+"/"+name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			out[i][k] = fileSig{exists: true, regular: st.Mode&unix.S_IFMT == unix.S_IFREG, dev: st.Dev, ino: st.Ino, size: st.Size, ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano()}
		}
	})
	return out
}
