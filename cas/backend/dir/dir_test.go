package dir_test

import (
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/backend/backendtest"
	"github.com/ckpt/ckpt/cas/backend/dir"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) cas.Backend {
		b, err := dir.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
