// Package backendtest is the conformance suite for backend.Backend
// implementations. Run calls it with a constructor of empty backends.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
)

// suite is the conformance suite's state: the backends' constructor and
// the context its calls run in.
type suite struct {
	ctx        context.Context
	newBackend func(t *testing.T) backend.Backend
}

// Run runs the suite; newBackend returns a new, empty backend each call.
func Run(t *testing.T, newBackend func(t *testing.T) backend.Backend) {
	s := &suite{ctx: context.Background(), newBackend: newBackend}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"PutGetStat", s.putGetStat},
		{"Ranges", s.ranges},
		{"NotFound", s.notFound},
		{"IfAbsent", s.ifAbsent},
		{"IfMatch", s.ifMatch},
		{"RacingCompareAndSwap", s.racingCompareAndSwap},
		{"ListDelete", s.listDelete},
		{"BadKeys", s.badKeys},
		{"Large", s.large},
	} {
		t.Run(c.name, c.fn)
	}
}

func (s *suite) put(t *testing.T, b backend.Backend, key, body string, cond backend.PutCond) (string, error) {
	t.Helper()
	return b.Put(s.ctx, key, strings.NewReader(body), int64(len(body)), cond)
}

func (s *suite) get(t *testing.T, b backend.Backend, key string, off, n int64) string {
	t.Helper()
	r, err := b.Get(s.ctx, key, off, n)
	if err != nil {
		t.Fatalf("get %s [%d,+%d]: %v", key, off, n, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return string(got)
}

func (s *suite) putGetStat(t *testing.T) {
	b := s.newBackend(t)
	body := "hello, object storage\n"
	etag, err := s.put(t, b, "a/b/c.txt", body, backend.PutCond{})
	if err != nil {
		t.Fatal(err)
	}
	if etag == "" {
		t.Fatal("empty etag")
	}
	if got := s.get(t, b, "a/b/c.txt", 0, -1); got != body {
		t.Fatalf("get = %q, want %q", got, body)
	}
	info, err := b.Stat(s.ctx, "a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(body)) || info.ETag != etag || info.Key != "a/b/c.txt" || info.Modified.IsZero() {
		t.Fatalf("stat = %+v, want size %d etag %s", info, len(body), etag)
	}
	if _, err := s.put(t, b, "empty", "", backend.PutCond{}); err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, b, "empty", 0, -1); got != "" {
		t.Fatalf("empty object read %q", got)
	}
}

func (s *suite) ranges(t *testing.T) {
	b := s.newBackend(t)
	var sb strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&sb, "%04d,", i)
	}
	body := sb.String()
	if _, err := s.put(t, b, "r", body, backend.PutCond{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, n int64 }{{0, 5}, {5, 10}, {100, 1}, {int64(len(body)) - 5, 5}, {12345, -1}, {0, int64(len(body))}} {
		want := body[c.off:]
		if c.n >= 0 {
			want = want[:c.n]
		}
		if got := s.get(t, b, "r", c.off, c.n); got != want {
			t.Fatalf("range %d+%d = %d bytes %.20q, want %d bytes %.20q", c.off, c.n, len(got), got, len(want), want)
		}
	}
	// A range past the end must not come back as a shorter object.
	r, err := b.Get(s.ctx, "r", int64(len(body))-3, 10)
	if err == nil {
		_, err = io.ReadAll(r)
		r.Close()
	}
	if err == nil {
		t.Fatal("a range past the end read cleanly")
	}
}

func (s *suite) notFound(t *testing.T) {
	b := s.newBackend(t)
	if _, err := b.Get(s.ctx, "nope/x", 0, -1); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("get absent: %v, want ErrNotFound", err)
	}
	if _, err := b.Stat(s.ctx, "nope/x"); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("stat absent: %v, want ErrNotFound", err)
	}
	if err := b.Delete(s.ctx, "nope/x"); err != nil {
		t.Fatalf("delete absent: %v", err)
	}
}

func (s *suite) ifAbsent(t *testing.T) {
	b := s.newBackend(t)
	if _, err := s.put(t, b, "k", "first", backend.PutCond{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.put(t, b, "k", "second", backend.PutCond{IfAbsent: true}); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("second create: %v, want ErrPrecondition", err)
	}
	if got := s.get(t, b, "k", 0, -1); got != "first" {
		t.Fatalf("after refused create: %q", got)
	}
}

func (s *suite) ifMatch(t *testing.T) {
	b := s.newBackend(t)
	e1, err := s.put(t, b, "head", "v1", backend.PutCond{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := s.put(t, b, "head", "v2", backend.PutCond{IfMatch: e1})
	if err != nil {
		t.Fatal(err)
	}
	if e2 == e1 {
		t.Fatalf("replacing did not change the etag %s", e1)
	}
	if _, err := s.put(t, b, "head", "v3", backend.PutCond{IfMatch: e1}); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("stale if-match: %v, want ErrPrecondition", err)
	}
	if got := s.get(t, b, "head", 0, -1); got != "v2" {
		t.Fatalf("after stale write: %q, want v2", got)
	}
	if _, err := s.put(t, b, "gone", "x", backend.PutCond{IfMatch: e2}); !errors.Is(err, backend.ErrPrecondition) {
		t.Fatalf("if-match on an absent key: %v, want ErrPrecondition", err)
	}
}

func (s *suite) racingCompareAndSwap(t *testing.T) {
	b := s.newBackend(t)
	e0, err := s.put(t, b, "head", "v0", backend.PutCond{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf("writer %d", i)
			_, err := b.Put(s.ctx, "head", strings.NewReader(body), int64(len(body)), backend.PutCond{IfMatch: e0})
			switch {
			case err == nil:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, backend.ErrPrecondition):
				t.Errorf("writer %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d writers replaced the same etag, want exactly 1", won)
	}
}

func (s *suite) listDelete(t *testing.T) {
	b := s.newBackend(t)
	keys := []string{"p/a", "p/b/c", "p/b/d", "q/a", "pp"}
	for _, k := range keys {
		if _, err := s.put(t, b, k, "body of "+k, backend.PutCond{}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) []string {
		got := []string{}
		err := b.List(s.ctx, prefix, func(o backend.ObjectInfo) error {
			if o.Size != int64(len("body of "+o.Key)) {
				t.Errorf("list %s: size %d", o.Key, o.Size)
			}
			got = append(got, o.Key)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := strings.Join(list("p/"), " "); got != "p/a p/b/c p/b/d" {
		t.Fatalf("list p/ = %s", got)
	}
	if got := strings.Join(list("p"), " "); got != "p/a p/b/c p/b/d pp" {
		t.Fatalf("list p = %s", got)
	}
	if got := list("zzz"); len(got) != 0 {
		t.Fatalf("list zzz = %v", got)
	}
	if err := b.Delete(s.ctx, "p/b/c"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(list("p/"), " "); got != "p/a p/b/d" {
		t.Fatalf("after delete list p/ = %s", got)
	}
	stop := errors.New("stop")
	if err := b.List(s.ctx, "", func(backend.ObjectInfo) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("list did not return fn's error: %v", err)
	}
}

func (s *suite) badKeys(t *testing.T) {
	b := s.newBackend(t)
	for _, k := range []string{"", "/abs", "a//b", "../up", "a/../b", "a/./b", "sp ace", "trail/"} {
		if _, err := s.put(t, b, k, "x", backend.PutCond{}); err == nil {
			t.Errorf("put %q succeeded", k)
		}
	}
}

func (s *suite) large(t *testing.T) {
	b := s.newBackend(t)
	body := bytes.Repeat([]byte("0123456789abcdef"), 20<<16) // 20 MiB: multipart on S3
	if _, err := b.Put(s.ctx, "big", bytes.NewReader(body), int64(len(body)), backend.PutCond{}); err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(s.ctx, "big")
	if err != nil || info.Size != int64(len(body)) {
		t.Fatalf("stat big: %+v %v", info, err)
	}
	if got := s.get(t, b, "big", 17<<20, 16); got != string(body[17<<20:17<<20+16]) {
		t.Fatalf("range of big = %q", got)
	}
}
