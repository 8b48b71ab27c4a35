package cas_test

import (
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	castest.Run(t, func(testing.TB) cas.Store { return cas.NewMemory() })
}
