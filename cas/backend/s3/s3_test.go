package s3_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/backend/backendtest"
	"github.com/ckpt/ckpt/cas/backend/s3"
	"github.com/ckpt/ckpt/cas/backend/s3/s3test"
)

// TestConformance runs the backend suite against a real S3 server
// (versitygw on loopback); each subtest gets its own prefix.
func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(t, "conformance", "")
	var n atomic.Int64
	backendtest.Run(t, func(t *testing.T) cas.Backend {
		c := cfg
		c.Prefix = fmt.Sprintf("t%d/x", n.Add(1))
		b, err := s3.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
