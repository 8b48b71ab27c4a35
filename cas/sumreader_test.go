package cas_test

import (
	"bytes"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

func TestSumReaderMatchesSum(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 1023, 1 << 20} {
		b := bytes.Repeat([]byte("ckpt\x00\xff"), n/6+1)[:n]
		id, size, err := cas.SumReader(bytes.NewReader(b))
		if err != nil || size != int64(n) || id != cas.Sum(b) {
			t.Errorf("n=%d: SumReader = %s, %d, %v; want %s, %d", n, id.Short(), size, err, cas.Sum(b).Short(), n)
		}
	}
}

func stringsReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }
