package agenttest3_test

import (
	"os"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
)

// TestMain builds the ckpt binary once for the whole package and puts it
// on $PATH as "ckpt" (harness.Main).
func TestMain(m *testing.M) {
	os.Exit(harness.Main(m))
}
