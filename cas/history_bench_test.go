//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cas_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// BenchmarkHistory is the blob side of bench/compare's store-bytes row: 1,000
// pieces of Go source (2-16 KiB), and HISTORY_TURNS turns (default 100) in
// each of which 100 of them get a line of 40-240 bytes inserted, every new
// version put with its previous version as delta hint, one batch per turn.
// It reports blobs.db's bytes per blob and, per b-tree, SQLite's pages,
// and the time to read every latest version back.
func BenchmarkHistory(b *testing.B) {
	turns := 100
	if s := os.Getenv("HISTORY_TURNS"); s != "" {
		if _, err := fmt.Sscan(s, &turns); err != nil {
			b.Fatal(err)
		}
	}
	var corpus []byte
	filepath.WalkDir(filepath.Join(goroot(b), "src"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || len(corpus) > 32<<20 {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(p, ".go") {
			if c, err := os.ReadFile(p); err == nil {
				corpus = append(corpus, c...)
			}
		}
		return nil
	})
	ctx := context.Background()
	for b.Loop() {
		rng := rand.New(rand.NewPCG(9, 10))
		text := func(n int) []byte {
			off := rng.IntN(len(corpus) - n)
			return slices.Clone(corpus[off : off+n])
		}
		dir := b.TempDir()
		d := openDisk(b, dir)
		files := make([][]byte, 1000)
		ids := make([]cas.ID, 1000)
		for i := range files {
			files[i] = text(2048 + rng.IntN(14336))
		}
		var putTime time.Duration
		put := func(pick []int) {
			start := time.Now()
			batch := d.NewBatch()
			for _, i := range pick {
				pctx := ctx
				if !ids[i].IsZero() {
					pctx = cas.WithBase(ctx, ids[i])
				}
				id, _, err := batch.Put(pctx, bytes.NewReader(files[i]))
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = id
			}
			if err := batch.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			putTime += time.Since(start)
		}
		for t := 0; t < turns; t++ {
			pick := rng.Perm(len(files))[:100]
			put(pick)
			for _, i := range pick {
				f := files[i]
				at := rng.IntN(len(f))
				if k := bytes.IndexByte(f[at:], '\n'); k >= 0 {
					at += k + 1
				} else {
					at = len(f)
				}
				files[i] = append(append(slices.Clip(f[:at]), text(40+rng.IntN(200))...), f[at:]...)
			}
		}
		var all []int
		for i := range files {
			all = append(all, i)
		}
		put(all)
		start := time.Now()
		for i, id := range ids {
			got, err := d.Get(ctx, id)
			if err != nil || !bytes.Equal(got, files[i]) {
				b.Fatalf("get %d: %v", i, err)
			}
		}
		getTime := time.Since(start)
		d.Close()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "blobs.db"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		var blobs, stored int64
		db.QueryRow(`SELECT count(*), sum(stored) FROM blobs`).Scan(&blobs, &stored)
		fi, _ := os.Stat(filepath.Join(dir, "blobs.db"))
		b.ReportMetric(float64(fi.Size())/1e6, "MB")
		b.ReportMetric(float64(stored)/1e6, "stored-MB")
		b.ReportMetric(float64(fi.Size()-stored)/float64(blobs), "overhead-B/blob")
		b.ReportMetric(float64(putTime.Microseconds())/float64(turns+1), "µs/turn")
		b.ReportMetric(float64(getTime.Microseconds())/1000, "µs/get")
		if testing.Verbose() {
			rows, err := db.Query(`SELECT name || ' ' || pagetype, count(*), sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name, pagetype ORDER BY 3 DESC`)
			if err == nil {
				for rows.Next() {
					var name string
					var pages, size, payload, unused int64
					rows.Scan(&name, &pages, &size, &payload, &unused)
					b.Logf("%-28s %6d pages %9d B, payload %9d, unused %8d", name, pages, size, payload, unused)
				}
				rows.Close()
			}
			rows, err = db.Query(`SELECT enc, depth, count(*), avg(stored) FROM blobs GROUP BY enc, depth`)
			if err == nil {
				for rows.Next() {
					var enc, depth, n int64
					var avg float64
					rows.Scan(&enc, &depth, &n, &avg)
					b.Logf("enc %d depth %2d: %5d blobs, %6.0f B stored on average", enc, depth, n, avg)
				}
				rows.Close()
			}
		}
		db.Close()
	}
}
