// Package dir is a backend.Backend in a local directory: for tests, and
// for a remote that is a mounted file system (NFS, a shared volume).
//
// Each object is a file at its key's path under the root. Put writes a
// temp file under root/.tmp, fsyncs it and renames it into place, holding
// root/.lock (an flock) so that conditional puts of one key are atomic
// across processes. An object's ETag is its size and modification time in
// nanoseconds; Put sets that time to be later than the replaced object's,
// so every write of a key gets a new ETag.
package dir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/gofrs/flock"
)

// Backend is a directory of objects.
type Backend struct {
	root string
	mu   sync.Mutex // with lock: one writer at a time
	lock *flock.Flock
}

var _ backend.Backend = (*Backend)(nil)

// New opens (creating) the directory root as a backend.
func New(root string) (*Backend, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, ".tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("backend dir: %w", err)
	}
	return &Backend{root: abs, lock: flock.New(filepath.Join(abs, ".lock"))}, nil
}

// String implements backend.Backend.
func (b *Backend) String() string { return "file://" + filepath.ToSlash(b.root) }

func (b *Backend) path(key string) (string, error) {
	if !backend.ValidKey(key) || strings.HasPrefix(key, ".") {
		return "", fmt.Errorf("backend dir: bad key %q", key)
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

func etag(fi fs.FileInfo) string {
	return strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
}

func notFound(key string) error { return fmt.Errorf("backend dir: %s: %w", key, cas.ErrNotFound) }

// Put implements backend.Backend.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, cond backend.PutCond) (string, error) {
	p, err := b.path(key)
	if err != nil {
		return "", err
	}
	t, err := os.CreateTemp(filepath.Join(b.root, ".tmp"), "put-*")
	if err != nil {
		return "", err
	}
	done := false
	defer func() {
		if !done {
			t.Close()
			os.Remove(t.Name())
		}
	}()
	n, err := io.Copy(t, ctxReader{ctx, r})
	if err != nil {
		return "", fmt.Errorf("backend dir: put %s: %w", key, err)
	}
	if n != size {
		return "", fmt.Errorf("backend dir: put %s: got %d bytes, want %d", key, n, size)
	}
	if err := t.Sync(); err != nil {
		return "", err
	}
	if err := t.Close(); err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lock.Lock(); err != nil {
		return "", err
	}
	defer b.lock.Unlock()
	old, err := os.Stat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	switch {
	case cond.IfAbsent && exists:
		return "", fmt.Errorf("backend dir: put %s: exists: %w", key, backend.ErrPrecondition)
	case cond.IfMatch != "" && (!exists || etag(old) != cond.IfMatch):
		return "", fmt.Errorf("backend dir: put %s: etag changed: %w", key, backend.ErrPrecondition)
	}
	mt := time.Now()
	if exists && !mt.After(old.ModTime()) {
		mt = old.ModTime().Add(time.Microsecond)
	}
	if err := os.Chtimes(t.Name(), mt, mt); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(t.Name(), p); err != nil {
		return "", err
	}
	done = true
	syncDir(filepath.Dir(p))
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	return etag(fi), nil
}

func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync() // not supported everywhere (Windows); best effort
		f.Close()
	}
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(key)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if off < 0 || off > fi.Size() {
		f.Close()
		return nil, fmt.Errorf("backend dir: get %s: offset %d outside %d bytes", key, off, fi.Size())
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if length < 0 {
		return f, nil
	}
	return &exact{r: f, n: length, c: f}, nil
}

// exact reads n bytes and fails with io.ErrUnexpectedEOF if r ends first.
type exact struct {
	r io.Reader
	n int64
	c io.Closer
}

func (e *exact) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

func (e *exact) Close() error { return e.c.Close() }

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	p, err := b.path(key)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return backend.ObjectInfo{}, notFound(key)
	}
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	if fi.IsDir() {
		return backend.ObjectInfo{}, notFound(key)
	}
	return backend.ObjectInfo{Key: key, Size: fi.Size(), ETag: etag(fi), Modified: fi.ModTime()}, nil
}

// List implements backend.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(backend.ObjectInfo) error) error {
	var out []backend.ObjectInfo
	err := filepath.WalkDir(b.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(b.root, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != b.root && (strings.HasPrefix(key, ".") || !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key+"/")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(key, ".") || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out = append(out, backend.ObjectInfo{Key: key, Size: fi.Size(), ETag: etag(fi), Modified: fi.ModTime()})
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("backend dir: list %s: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	for _, o := range out {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lock.Lock(); err != nil {
		return err
	}
	defer b.lock.Unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backend dir: delete %s: %w", key, err)
	}
	return nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
