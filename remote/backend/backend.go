// Package backend is the object storage a remote lives in: the Backend
// interface, its put conditions and key rules. Implementations are its
// subpackages, dir (a local or mounted directory) and s3 (an S3-compatible
// bucket); backendtest is the conformance suite both pass. Package remote
// opens one from its configuration, or takes any Backend in remote.Open.
package backend

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrPrecondition is wrapped by Backend.Put when its condition does not hold:
// IfAbsent and the key exists, or IfMatch and the object's ETag differs (or
// it is gone). The object is left as it was.
var ErrPrecondition = errors.New("precondition failed")

// Backend is object storage under a key space: a local directory, or an
// S3-compatible bucket. Keys are slash-separated paths of safe names (see
// ValidKey). Objects are written whole and atomically: a reader sees the
// old object or the new one, never a part. Missing objects are reported as
// errors wrapping cas.ErrNotFound; a body that ends early is an error, never a
// shorter object.
//
// Implementations live under remote/backend; remote/backend/backendtest
// is the conformance suite every one of them passes.
type Backend interface {
	// Put writes size bytes from r under key. With cond.IfAbsent it fails
	// with ErrPrecondition when key exists; with cond.IfMatch it fails with
	// ErrPrecondition unless key exists with that ETag. It returns the new
	// object's ETag.
	Put(ctx context.Context, key string, r io.Reader, size int64, cond PutCond) (etag string, err error)
	// Get reads length bytes of key from offset off; length < 0 reads to
	// the end. The reader fails (never a clean EOF) if the body ends before
	// the bytes the range promised.
	Get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Stat describes key.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List calls fn for every key under prefix (a plain string prefix), in
	// key order. It stops at and returns fn's first error.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error
	// String names the backend for messages (no secrets).
	String() string
}

// PutCond is Put's condition. The zero value writes unconditionally.
type PutCond struct {
	IfAbsent bool   // create only: fail if the key exists
	IfMatch  string // replace only the object with this ETag
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key      string
	Size     int64
	ETag     string
	Modified time.Time // the server's time of the last write
}

// ValidKey reports whether key is usable by every backend: 1-512 bytes of
// segments separated by '/', each of letters, digits, '.', '_', '-' or '=',
// not "." or "..", with no empty segment.
func ValidKey(key string) bool {
	if key == "" || len(key) > 512 {
		return false
	}
	seg := 0
	start := 0
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			s := key[start:i]
			if s == "" || s == "." || s == ".." {
				return false
			}
			seg++
			start = i + 1
			continue
		}
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '=') {
			return false
		}
	}
	return seg > 0
}
