package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/dir"
)

func TestTrailerRoundTripAndBounds(t *testing.T) {
	t.Parallel()
	var p packBuilder
	for i := 0; i < 3; i++ {
		body := []byte(strings.Repeat(fmt.Sprint(i), 10+i))
		if err := p.add(cas.Stored{ID: cas.Sum(body), Size: int64(len(body)), Stored: int64(len(body))}, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	want := append([]Entry(nil), p.entries...)
	pack, key := p.finish()
	if key != packKey(cas.Sum(pack)) {
		t.Fatalf("key %s is not the pack's hash", key)
	}
	tl := trailerLen(len(want))
	got, err := parseTrailer(pack[int64(len(pack))-tl:], int64(len(pack)))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i, e := range got {
		if frame := pack[e.Off : e.Off+e.Stored.Stored]; cas.Sum(frame) != e.ID {
			t.Fatalf("entry %d does not locate its frame", i)
		}
	}
	// Damage: a frame reaching into the trailer, a bad magic, a wrong count.
	bad := bytes.Clone(pack)
	off := int64(len(bad)) - tl + 2*entrySize + 49
	bad[off] = 0xff
	if _, err := parseTrailer(bad[int64(len(bad))-tl:], int64(len(bad))); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("an entry out of bounds: %v", err)
	}
	bad = bytes.Clone(pack)
	bad[len(bad)-1] = 'X'
	if _, err := parseTrailer(bad[int64(len(bad))-tl:], int64(len(bad))); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("bad magic: %v", err)
	}
	if _, err := parseTrailer(pack[int64(len(pack))-tl+entrySize:], int64(len(pack))); !errors.Is(err, cas.ErrCorrupt) {
		t.Fatalf("a short trailer: %v", err)
	}
}

func TestConfig(t *testing.T) {
	store := t.TempDir()
	t.Setenv("CKPT_REMOTE", "")
	if _, err := LoadConfig(store); !errors.Is(err, ErrNoRemote) {
		t.Fatalf("no remote: %v", err)
	}
	os.WriteFile(filepath.Join(store, "config.json"), []byte(`{"max_age": "30d", "remote": "s3://bucket/team/a"}`), 0o644)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	c, err := LoadConfig(store)
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "s3://bucket/team/a" || !strings.HasSuffix(c.Source, "config.json") || c.Endpoint != "http://127.0.0.1:9" || !c.SecretSet {
		t.Fatalf("config %+v", c)
	}
	if b, err := c.Backend(); err != nil || !strings.Contains(b.String(), "s3://bucket/team/a") {
		t.Fatalf("backend %v %v", b, err)
	}
	t.Setenv("CKPT_REMOTE", "file:///"+filepath.ToSlash(strings.TrimPrefix(t.TempDir(), "/")))
	if c, err := LoadConfig(store); err != nil || c.Source != "CKPT_REMOTE" {
		t.Fatalf("env over config.json: %+v %v", c, err)
	}
	// OpenStore opens the configured remote, creating the store's
	// directory; with none configured it fails wrapping ErrNoRemote.
	fresh := filepath.Join(t.TempDir(), "new-store")
	if r, err := OpenStore(context.Background(), fresh); err != nil {
		t.Fatalf("OpenStore: %v", err)
	} else {
		r.Close()
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("OpenStore made no store directory: %v", err)
	}
	t.Setenv("CKPT_REMOTE", "")
	if _, err := OpenStore(context.Background(), t.TempDir()); !errors.Is(err, ErrNoRemote) {
		t.Errorf("OpenStore without a remote: %v, want ErrNoRemote", err)
	}
	for _, bad := range []string{"s3://", "ftp://x/y", "file://relative/path", "s3://b/sp ace", "://"} {
		t.Setenv("CKPT_REMOTE", bad)
		if _, err := LoadConfig(store); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSyncPullDir runs sync and pull against a directory remote: what is
// pulled reads back byte for byte, a second sync uploads nothing, and a
// HEAD moved by another writer forks.
func TestSyncPullDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	ws, storeA, storeB := filepath.Join(root, "ws"), filepath.Join(root, "A"), filepath.Join(root, "B")
	os.MkdirAll(ws, 0o755)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: storeA, Session: "s1", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	for i := 0; i < 3; i++ {
		if _, err := c.BeginTurn(ctx, fmt.Sprintf("turn %d", i), controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 4; j++ {
			p := filepath.Join(ws, fmt.Sprintf("f%d.txt", j))
			body := []byte(strings.Repeat(fmt.Sprintf("turn %d file %d\n", i, j), 100*(j+1)))
			os.WriteFile(p, body, 0o644)
			contents[p+fmt.Sprint(i)] = body
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}
	}
	c.Close()
	b, err := dir.New(filepath.Join(root, "remote"))
	if err != nil {
		t.Fatal(err)
	}
	ra, err := Open(ctx, storeA, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	res, err := ra.Sync(ctx, nil, true)
	if err != nil || len(res) != 1 || res[0].Status != "uploaded" || res[0].Blobs != 12 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	if res, err := ra.Sync(ctx, nil, true); err != nil || res[0].Status != "unchanged" {
		t.Fatalf("second sync: %+v %v", res, err)
	}
	rb, err := Open(ctx, storeB, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	pr, err := rb.Pull(ctx, PullOptions{Session: "s1", As: "copy", Workspace: filepath.Join(root, "wsB")})
	if err != nil || pr.Blobs != 12 || pr.Turns != 3 {
		t.Fatalf("pull: %+v %v", pr, err)
	}
	// Every blob reads back the same in B.
	blobsA, _ := cas.OpenDisk(ctx, filepath.Join(storeA, "blobs"))
	defer blobsA.Close()
	n := 0
	err = blobsA.Walk(ctx, func(i cas.Info) error {
		want, err := blobsA.Get(ctx, i.ID)
		if err != nil {
			return err
		}
		got, err := rb.blobs.Get(ctx, i.ID)
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("blob %s: %v", i.ID.Short(), err)
		}
		n++
		return nil
	})
	if err != nil || n != 12 {
		t.Fatalf("%d blobs compared: %v", n, err)
	}
	if _, err := rb.Pull(ctx, PullOptions{Session: "s1", As: "copy"}); !errors.Is(err, ErrSessionExists) {
		t.Fatalf("pull over a local session: %v", err)
	}
	// Another writer replaces HEAD: A's next sync forks.
	if _, err := b.Put(ctx, headKey("s1"), strings.NewReader("{}"), 2, backend.PutCond{}); err != nil {
		t.Fatal(err)
	}
	c, err = controller.Open(ctx, controller.Options{Workspace: ws, Store: storeA, Session: "s1", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	c.BeginTurn(ctx, "after the other writer", controller.TurnOptions{})
	c.Close()
	res, err = ra.Sync(ctx, nil, true)
	if err != nil || res[0].Status != "forked" || !strings.HasPrefix(res[0].RemoteSession, "s1-fork-") {
		t.Fatalf("sync after a foreign HEAD: %+v %v", res, err)
	}
	if got, err := b.Get(ctx, headKey("s1"), 0, -1); err == nil {
		body := new(bytes.Buffer)
		body.ReadFrom(got)
		got.Close()
		if body.String() != "{}" {
			t.Fatalf("the other writer's HEAD was overwritten: %s", body)
		}
	}
	heads, err := ra.Sessions(ctx)
	if err == nil {
		t.Fatalf("listing a remote with a malformed HEAD succeeded: %+v", heads)
	}
}

// TestVerifyDir: verify passes on a sound remote, and names a flipped byte
// in a pack as corrupt and a deleted pack as missing.
func TestVerifyDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	for _, sess := range []string{"s1", "s2"} {
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: sess, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		c.BeginTurn(ctx, "t", controller.TurnOptions{})
		p := filepath.Join(ws, sess+".txt")
		os.WriteFile(p, []byte(strings.Repeat(sess+" content\n", 300)), 0o644)
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		c.Close()
		b, _ := dir.New(filepath.Join(root, "remote"))
		r, err := Open(ctx, store, "file://test", b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Sync(ctx, []string{sess}, true); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	b, _ := dir.New(filepath.Join(root, "remote"))
	r, err := Open(ctx, t.TempDir(), "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(ctx, nil)
	if err != nil || !rep.OK() || rep.Sessions != 2 || rep.Blobs != 2 {
		t.Fatalf("sound remote: %+v %v", rep, err)
	}
	var packs []string
	b.List(ctx, "packs/", func(o backend.ObjectInfo) error { packs = append(packs, o.Key); return nil })
	if len(packs) != 2 {
		t.Fatalf("%d packs, want 2", len(packs))
	}
	p0 := filepath.Join(root, "remote", filepath.FromSlash(packs[0]))
	body, _ := os.ReadFile(p0)
	body[3] ^= 1
	os.WriteFile(p0, body, 0o644)
	os.Remove(filepath.Join(root, "remote", filepath.FromSlash(packs[1])))
	rep, err = r.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, f := range rep.Findings {
		kinds[f.Key] = f.Kind
	}
	if kinds[packs[0]] != "corrupt" || kinds[packs[1]] != "missing" || len(rep.Findings) != 3 || kinds[headKey("s2")] != "unlisted" {
		t.Fatalf("findings %+v, want %s corrupt and %s missing (and a blob unlisted for it)", rep.Findings, packs[0], packs[1])
	}
}

// TestGCTwoPhase: an unreferenced pack survives the first collection, a
// second one within the margin, and goes at the first collection a margin
// after the first while its server time is older than the margin; a sync
// meanwhile never reuses it, and what it uploads instead survives.
func TestGCTwoPhase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	shared := filepath.Join(ws, "shared.txt")
	os.WriteFile(shared, []byte(strings.Repeat("in both sessions\n", 200)), 0o644)
	only1 := filepath.Join(ws, "only1.txt")
	os.WriteFile(only1, []byte("only in s1\n"), 0o644)
	capture := func(sess string, paths ...string) {
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: sess, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.BeginTurn(ctx, "t", controller.TurnOptions{})
		for _, p := range paths {
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}
	}
	b, _ := dir.New(filepath.Join(root, "remote"))
	r, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	capture("s1", shared, only1)
	if _, err := r.Sync(ctx, []string{"s1"}, true); err != nil {
		t.Fatal(err)
	}
	h1, _, err := r.ReadHead(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	p1 := h1.Packs[0].Key
	// s1 leaves the remote: its pack and index are unreferenced.
	if err := b.Delete(ctx, headKey("s1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	at := func(d time.Duration) GCOptions { return GCOptions{Now: func() time.Time { return start.Add(d) }} }
	rep, err := r.GC(ctx, at(0))
	if err != nil || len(rep.Deleted) != 0 || rep.Candidates != 2 {
		t.Fatalf("first collection: %+v %v", rep, err)
	}
	// s2 names the same blob: sync must not reuse the condemned pack.
	capture("s2", shared)
	if _, err := r.Sync(ctx, []string{"s2"}, true); err != nil {
		t.Fatal(err)
	}
	h2, _, err := r.ReadHead(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if len(h2.Packs) != 1 || h2.Packs[0].Key == p1 {
		t.Fatalf("s2 names %+v, reusing the condemned %s", h2.Packs, p1)
	}
	if rep, err := r.GC(ctx, at(time.Hour)); err != nil || len(rep.Deleted) != 0 {
		t.Fatalf("within the margin: %+v %v", rep, err)
	}
	if rep, err := r.GC(ctx, at(25*time.Hour).withDryRun()); err != nil || len(rep.Deleted) != 2 {
		t.Fatalf("dry run past the margin: %+v %v", rep, err)
	}
	if _, err := b.Stat(ctx, p1); err != nil {
		t.Fatalf("a dry run deleted: %v", err)
	}
	rep, err = r.GC(ctx, at(25*time.Hour))
	if err != nil || len(rep.Deleted) != 2 || rep.Deleted[0] != p1 || rep.Live != 2 {
		t.Fatalf("past the margin: %+v %v", rep, err)
	}
	if _, err := b.Stat(ctx, p1); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("the pack survived: %v", err)
	}
	if v, err := r.Verify(ctx, nil); err != nil || !v.OK() {
		t.Fatalf("verify after gc: %+v %v", v, err)
	}
	// A pack written just now is never deleted, whatever the state says.
	rep, err = r.GC(ctx, at(0))
	if err != nil || len(rep.Deleted) != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
}

func (o GCOptions) withDryRun() GCOptions { o.DryRun = true; return o }

// TestSyncUnknownSession: naming a session the store lacks is an error and
// leaves no empty index behind (which would then list as a session).
func TestSyncUnknownSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	os.MkdirAll(filepath.Join(store, "sessions", "ghost"), 0o755)
	b, _ := dir.New(t.TempDir())
	r, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Sync(ctx, []string{"ghost"}, true); err == nil {
		t.Fatal("sync of a session without an index succeeded")
	}
	if _, err := os.Stat(filepath.Join(store, "sessions", "ghost", "index.db")); err == nil {
		t.Fatal("sync created an empty index")
	}
}

// TestLargeBlobAlone: a blob larger than a pack travels in a pack of its
// own, streamed both ways, and reads back byte for byte; a pack holding
// only that blob is named by the HEAD.
func TestLargeBlobAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	big := make([]byte, 2*PackTarget+1<<20) // over twice the target: fetched by itself too
	rng := rand.New(rand.NewPCG(5, 5))      // noise: it must not compress below a pack
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	p := filepath.Join(ws, "big.bin")
	os.WriteFile(p, big, 0o644)
	small := filepath.Join(ws, "small.txt")
	os.WriteFile(small, []byte("small\n"), 0o644)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "s", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	c.BeginTurn(ctx, "t", controller.TurnOptions{})
	for _, f := range []string{p, small} {
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{f}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	c.Close()
	b, _ := dir.New(filepath.Join(root, "remote"))
	r, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Sync(ctx, nil, true)
	if err != nil || res[0].Packs != 2 || res[0].Blobs != 2 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	h, _, err := r.ReadHead(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	alone := false
	for _, pk := range h.Packs {
		if pk.Entries == 1 && pk.Size > PackTarget {
			alone = true
		}
	}
	if !alone {
		t.Fatalf("no pack of its own for the large blob: %+v", h.Packs)
	}
	rb, err := Open(ctx, filepath.Join(root, "B"), "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if _, err := rb.Pull(ctx, PullOptions{Session: "s", Workspace: filepath.Join(root, "wsB")}); err != nil {
		t.Fatal(err)
	}
	got, err := rb.blobs.Get(ctx, cas.Sum(big))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("large blob after pull: %d bytes, %v", len(got), err)
	}
	if v, err := rb.Verify(ctx, nil); err != nil || !v.OK() || v.Blobs != 2 {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

// TestSyncBusy: a sync that finds another sync of the store running leaves
// it the work without --wait, and waits for it with --wait.
func TestSyncBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	b, _ := dir.New(t.TempDir())
	r1, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	unlock, err := r1.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Sync(ctx, nil, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("sync beside a running one: %v, want ErrBusy", err)
	}
	done := make(chan error)
	go func() { _, err := r2.Sync(ctx, nil, true); done <- err }()
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("sync --wait: %v", err)
	}
}

// TestSyncAfterLostHeadAnswer: a sync whose HEAD write committed but whose
// answer never came (so this store did not record the new ETag) is not
// mistaken by the next sync for another writer: no fork.
func TestSyncAfterLostHeadAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "s", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	c.BeginTurn(ctx, "t", controller.TurnOptions{})
	c.Close()
	b, _ := dir.New(filepath.Join(root, "remote"))
	r, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Sync(ctx, nil, true); err != nil {
		t.Fatal(err)
	}
	// The write that committed was an earlier attempt, at another time;
	// and its answer was lost: the store still has the ETag from before it.
	h, _, err := r.ReadHead(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	h.Updated = "2001-01-01T00:00:00Z"
	body, _ := json.Marshal(h)
	if _, err := b.Put(ctx, headKey("s"), bytes.NewReader(body), int64(len(body)), backend.PutCond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.ExecContext(ctx, `UPDATE heads SET etag = 'before', index_sum = 'before'`); err != nil {
		t.Fatal(err)
	}
	res, err := r.Sync(ctx, nil, true)
	if err != nil || res[0].Status != "uploaded" || res[0].RemoteSession != "s" {
		t.Fatalf("sync after a lost answer: %+v %v", res, err)
	}
	if res, err := r.Sync(ctx, nil, true); err != nil || res[0].Status != "unchanged" {
		t.Fatalf("and then: %+v %v", res, err)
	}
}
