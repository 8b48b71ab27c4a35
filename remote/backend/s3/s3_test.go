package s3_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/s3test"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/backendtest"
	"github.com/ckpt/ckpt/remote/backend/s3"
)

// TestConformance runs the backend suite against a real S3 server
// (versitygw on loopback); each subtest gets its own prefix.
func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(t, "conformance", "")
	var n atomic.Int64
	backendtest.Run(t, func(t *testing.T) backend.Backend {
		c := cfg
		c.Prefix = fmt.Sprintf("t%d/x", n.Add(1))
		b, err := s3.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestAbortStaleUploads: an unfinished multipart upload is aborted once it
// is older than the cutoff, and not before.
func TestAbortStaleUploads(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(t, "uploads", "pre")
	b, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.NewUpload(ctx, "packs/aa/dead.pack"); err != nil {
		t.Fatal(err)
	}
	if n, err := b.AbortStaleUploads(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("a fresh upload: aborted %d, %v", n, err)
	}
	if n, err := b.AbortStaleUploads(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("a stale upload: aborted %d, %v", n, err)
	}
	if n, err := b.AbortStaleUploads(ctx, time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("after aborting: %d left, %v", n, err)
	}
}
