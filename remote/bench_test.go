package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/s3test"
	"github.com/ckpt/ckpt/remote/backend/s3"
)

// benchSession captures n files of size bytes (half compressible text,
// half noise) into a new store, in one turn.
func benchSession(b *testing.B, n, size int) (store, ws string) {
	ctx := context.Background()
	root := b.TempDir()
	store, ws = filepath.Join(root, "store"), filepath.Join(root, "ws")
	os.MkdirAll(ws, 0o755)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "bench", NoAutoRetention: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.BeginTurn(ctx, "bench", controller.TurnOptions{}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, size)
	for i := 0; i < n; i++ {
		for j := range buf {
			if j < size/2 {
				buf[j] = "func main() {\n\treturn\n}\n"[j%24]
			} else {
				buf[j] = byte(rng.Uint32())
			}
		}
		p := filepath.Join(ws, fmt.Sprintf("d%d/f%d.go", i%10, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, buf, 0o644)
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
	return store, ws
}

// BenchmarkSyncS3 uploads a 1,000-file session (8 KiB each) to versitygw on
// loopback; BenchmarkPullS3 pulls it into an empty store. Bytes/s is of the
// files' uncompressed size.
func BenchmarkSyncS3(b *testing.B) {
	srv := s3test.Start(b)
	cfg := srv.Config(b, "bench", "")
	store, _ := benchSession(b, 1000, 8<<10)
	b.SetBytes(1000 * 8 << 10)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := cfg
		c.Prefix = fmt.Sprintf("run%d", i)
		be, _ := s3.New(c)
		r, err := Open(ctx, store, c.Prefix, be) // a new remote name: its rows are apart
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Sync(ctx, nil, true); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

func BenchmarkPullS3(b *testing.B) {
	srv := s3test.Start(b)
	cfg := srv.Config(b, "bench", "p")
	store, _ := benchSession(b, 1000, 8<<10)
	be, _ := s3.New(cfg)
	ctx := context.Background()
	r, err := Open(ctx, store, "x", be)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Sync(ctx, nil, true); err != nil {
		b.Fatal(err)
	}
	r.Close()
	b.SetBytes(1000 * 8 << 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := b.TempDir()
		r, err := Open(ctx, dst, "x", be)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Pull(ctx, PullOptions{Session: "bench", As: "bench", Workspace: filepath.Join(dst, "ws")}); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// rewindSession is benchSession whose files are then all rewritten, so a
// rewind to turn 0 restores all of them.
func rewindSession(b *testing.B) (store, ws string) {
	store, ws = benchSession(b, 1000, 8<<10)
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.WriteFile(p, []byte("rewritten by the agent\n"), 0o644)
		}
		return nil
	})
	return store, ws
}

func rewind0(b *testing.B, store, ws string) {
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "bench", NoAutoRetention: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	res, err := c.Rewind(ctx, controller.Target{Turn: 0}, "code", controller.RewindOptions{Force: true})
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Restored) != 1000 {
		b.Fatalf("restored %d files, want 1000", len(res.Restored))
	}
}

// BenchmarkRewindLocal rewinds the 1,000 files of a session in its own
// store; BenchmarkPullRewindS3 pulls the session from versitygw on loopback
// into an empty store first, then rewinds the same 1,000 files there.
func BenchmarkRewindLocal(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store, ws := rewindSession(b)
		b.StartTimer()
		rewind0(b, store, ws)
	}
}

func BenchmarkPullRewindS3(b *testing.B) {
	srv := s3test.Start(b)
	cfg := srv.Config(b, "bench", "pr")
	be, _ := s3.New(cfg)
	store, _ := rewindSession(b)
	ctx := context.Background()
	r, err := Open(ctx, store, "x", be)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Sync(ctx, nil, true); err != nil {
		b.Fatal(err)
	}
	r.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := b.TempDir()
		ws := filepath.Join(dst, "ws")
		r, err := Open(ctx, dst, "x", be)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Pull(ctx, PullOptions{Session: "bench", As: "bench", Workspace: ws}); err != nil {
			b.Fatal(err)
		}
		r.Close()
		rewind0(b, dst, ws)
	}
}
