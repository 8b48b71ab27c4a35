package checkpoints

import (
	"encoding/binary"
	"os"
	"path/filepath"
)

// fileSig is what the catalog records of one file of an index.
type fileSig struct {
	exists       bool
	dev, ino     uint64
	size         int64
	ctime, mtime int64 // unix nanoseconds; ctime is mtime where the platform has none
}

// sigs is the signature of a session's index: index.db and its WAL.
type sigs [2]fileSig

// indexSig lstats the index files of session directory dir.
func indexSig(dir string) sigs {
	var s sigs
	for i, name := range []string{FileName, FileName + "-wal"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		s[i] = statSig(fi)
	}
	return s
}

// encode is the signature as stored in the catalog.
func (s sigs) encode() []byte {
	b := make([]byte, 0, 2*41)
	for _, f := range s {
		if !f.exists {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, f.dev)
		b = binary.BigEndian.AppendUint64(b, f.ino)
		b = binary.BigEndian.AppendUint64(b, uint64(f.size))
		b = binary.BigEndian.AppendUint64(b, uint64(f.ctime))
		b = binary.BigEndian.AppendUint64(b, uint64(f.mtime))
	}
	return b
}

// trusted reports whether a summary recorded with signature rec, read
// after time at (unix ns), still holds for an index whose files now have
// signature s (see the catalog's rules in catalog.go).
func (s sigs) trusted(rec []byte, at int64) bool {
	if string(s.encode()) != string(rec) {
		return false
	}
	db, wal := s[0], s[1]
	if !db.exists || db.size == 0 || (wal.exists && wal.size > 0) {
		return false
	}
	limit := at - int64(catalogMargin)
	for _, f := range s {
		if f.exists && (f.ctime >= limit || f.mtime >= limit) {
			return false
		}
	}
	return true
}

// modTime is a file's modification time in unix nanoseconds.
func modTime(fi os.FileInfo) int64 { return fi.ModTime().UnixNano() }
