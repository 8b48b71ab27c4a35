// Package s3 is a backend.Backend on an S3-compatible bucket (AWS S3,
// GCS, R2, MinIO, versitygw), through github.com/minio/minio-go/v7, which
// is pure Go.
//
// Keys live under a prefix in one bucket. Conditional puts use the
// standard If-None-Match: * (create only) and If-Match: ETag headers; a
// server that answers 412 PreconditionFailed (or 409 for a concurrent
// conditional write) gives backend.ErrPrecondition. Ranged reads go through the
// raw response body, and a body shorter than its range is an error, never
// a short object.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where the bucket is and how to sign requests.
type Config struct {
	Endpoint  string // URL, e.g. http://127.0.0.1:7070; empty means AWS (https://s3.amazonaws.com)
	Bucket    string
	Prefix    string // keys are Prefix + "/" + key; may be empty
	AccessKey string
	SecretKey string
	Token     string // a session token for temporary credentials; may be empty
	Region    string // default us-east-1
	// Transport overrides the HTTP transport (tests put a fault proxy in
	// front of the server with an ordinary URL instead).
	Transport http.RoundTripper
}

// Backend is a bucket (and prefix) of an S3-compatible server.
type Backend struct {
	cfg  Config
	c    *minio.Client
	core minio.Core
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend for cfg. It makes no request.
func New(cfg Config) (*Backend, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	host, secure, lookup := "s3.amazonaws.com", true, minio.BucketLookupAuto
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("s3: endpoint %q is not an http(s) URL", cfg.Endpoint)
		}
		host, secure, lookup = u.Host, u.Scheme == "https", minio.BucketLookupPath
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.Prefix = strings.Trim(cfg.Prefix, "/")
	c, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.Token),
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    cfg.Transport,
		MaxRetries:   4,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	return &Backend{cfg: cfg, c: c, core: minio.Core{Client: c}}, nil
}

// String implements backend.Backend.
func (b *Backend) String() string {
	s := "s3://" + b.cfg.Bucket
	if b.cfg.Prefix != "" {
		s += "/" + b.cfg.Prefix
	}
	if b.cfg.Endpoint != "" {
		s += " at " + b.cfg.Endpoint
	}
	return s
}

// EnsureBucket creates the bucket if it does not exist (tests, first use
// on a private server).
func (b *Backend) EnsureBucket(ctx context.Context) error {
	ok, err := b.c.BucketExists(ctx, b.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("s3: bucket %s: %w", b.cfg.Bucket, err)
	}
	if ok {
		return nil
	}
	if err := b.c.MakeBucket(ctx, b.cfg.Bucket, minio.MakeBucketOptions{Region: b.cfg.Region}); err != nil {
		return fmt.Errorf("s3: make bucket %s: %w", b.cfg.Bucket, err)
	}
	return nil
}

func (b *Backend) name(key string) (string, error) {
	if !backend.ValidKey(key) {
		return "", fmt.Errorf("s3: bad key %q", key)
	}
	if b.cfg.Prefix == "" {
		return key, nil
	}
	return b.cfg.Prefix + "/" + key, nil
}

// wrap maps S3 errors to the cas sentinels.
func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket":
		return fmt.Errorf("s3: %s %s: %w", op, key, cas.ErrNotFound)
	case r.Code == "PreconditionFailed" || r.StatusCode == http.StatusPreconditionFailed ||
		r.Code == "ConditionalRequestConflict" || r.StatusCode == http.StatusConflict && op == "put":
		return fmt.Errorf("s3: %s %s: %w", op, key, backend.ErrPrecondition)
	}
	return fmt.Errorf("s3: %s %s: %w", op, key, err)
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }

// Put implements backend.Backend.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, cond backend.PutCond) (string, error) {
	name, err := b.name(key)
	if err != nil {
		return "", err
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", DisableContentSha256: false}
	switch {
	case cond.IfAbsent:
		opts.SetMatchETagExcept("*")
	case cond.IfMatch != "":
		opts.SetMatchETag(cond.IfMatch)
	}
	info, err := b.c.PutObject(ctx, b.cfg.Bucket, name, r, size, opts)
	if err != nil {
		err = wrap("put", key, err)
		if cond.IfMatch != "" && errors.Is(err, cas.ErrNotFound) { // S3 answers 404 for If-Match on a missing key
			err = fmt.Errorf("s3: put %s: gone: %w", key, backend.ErrPrecondition)
		}
		return "", err
	}
	if info.Size != size {
		return "", fmt.Errorf("s3: put %s: server took %d bytes of %d", key, info.Size, size)
	}
	return unquote(info.ETag), nil
}

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	name, err := b.name(key)
	if err != nil {
		return nil, err
	}
	var opts minio.GetObjectOptions
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if off > 0 || length > 0 {
		end := int64(0)
		if length > 0 {
			end = off + length - 1
		}
		if err := setRange(&opts, off, end, length); err != nil {
			return nil, err
		}
	}
	body, info, _, err := b.core.GetObject(ctx, b.cfg.Bucket, name, opts)
	if err != nil {
		return nil, wrap("get", key, err)
	}
	want := info.Size
	if length > 0 {
		want = length
	}
	if want < 0 {
		return body, nil
	}
	return &exact{r: body, n: want, c: body, key: key}, nil
}

func setRange(o *minio.GetObjectOptions, off, end, length int64) error {
	if length < 0 { // off > 0, to the end
		o.Set("Range", fmt.Sprintf("bytes=%d-", off))
		return nil
	}
	return o.SetRange(off, end)
}

// exact reads n bytes and fails with io.ErrUnexpectedEOF if the body ends
// first.
type exact struct {
	r   io.Reader
	n   int64
	c   io.Closer
	key string
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
		err = fmt.Errorf("s3: get %s: body ended %d bytes early: %w", e.key, e.n, io.ErrUnexpectedEOF)
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

func (e *exact) Close() error { return e.c.Close() }

// Stat implements backend.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	name, err := b.name(key)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	info, err := b.c.StatObject(ctx, b.cfg.Bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return backend.ObjectInfo{}, wrap("stat", key, err)
	}
	return backend.ObjectInfo{Key: key, Size: info.Size, ETag: unquote(info.ETag), Modified: info.LastModified}, nil
}

// List implements backend.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(backend.ObjectInfo) error) error {
	full := prefix
	if b.cfg.Prefix != "" {
		full = b.cfg.Prefix + "/" + prefix
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for o := range b.c.ListObjects(ctx, b.cfg.Bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
		if o.Err != nil {
			return wrap("list", prefix, o.Err)
		}
		key := o.Key
		if b.cfg.Prefix != "" {
			key = strings.TrimPrefix(key, b.cfg.Prefix+"/")
		}
		if err := fn(backend.ObjectInfo{Key: key, Size: o.Size, ETag: unquote(o.ETag), Modified: o.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// Delete implements backend.Backend.
func (b *Backend) Delete(ctx context.Context, key string) error {
	name, err := b.name(key)
	if err != nil {
		return err
	}
	err = wrap("delete", key, b.c.RemoveObject(ctx, b.cfg.Bucket, name, minio.RemoveObjectOptions{}))
	if errors.Is(err, cas.ErrNotFound) {
		return nil
	}
	return err
}

// AbortStaleUploads aborts the multipart uploads under the prefix that
// were started before cutoff (server time): parts of uploads whose writer
// died, which the server keeps, and bills, until they are aborted.
func (b *Backend) AbortStaleUploads(ctx context.Context, cutoff time.Time) (int, error) {
	prefix := ""
	if b.cfg.Prefix != "" {
		prefix = b.cfg.Prefix + "/"
	}
	type upload struct{ key, id string }
	var stale []upload
	for u := range b.c.ListIncompleteUploads(ctx, b.cfg.Bucket, prefix, true) {
		if u.Err != nil {
			return 0, wrap("list uploads", prefix, u.Err)
		}
		if u.Initiated.Before(cutoff) {
			stale = append(stale, upload{u.Key, u.UploadID})
		}
	}
	for i, u := range stale {
		if err := b.core.AbortMultipartUpload(ctx, b.cfg.Bucket, u.key, u.id); err != nil {
			return i, wrap("abort upload", u.key, err)
		}
	}
	return len(stale), nil
}

// NewUpload starts a multipart upload of key and returns its id; tests
// use it to leave an upload unfinished.
func (b *Backend) NewUpload(ctx context.Context, key string) (string, error) {
	name, err := b.name(key)
	if err != nil {
		return "", err
	}
	id, err := b.core.NewMultipartUpload(ctx, b.cfg.Bucket, name, minio.PutObjectOptions{})
	return id, wrap("new upload", key, err)
}
