package cas_test

import (
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

func TestMemory(t *testing.T) {
	castest.Run(t, func(testing.TB) cas.Store { return cas.NewMemory() })
}
