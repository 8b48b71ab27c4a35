package dir_test

import (
	"testing"

	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/backendtest"
	"github.com/ckpt/ckpt/remote/backend/dir"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.Backend {
		b, err := dir.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
