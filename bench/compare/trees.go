//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sourceText returns n bytes of Go source cut from GOROOT/src.
var corpus []byte

func sourceText(n int, rng *rand.Rand) []byte {
	if corpus == nil {
		root := filepath.Join(goroot(), "src")
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || len(corpus) > 64<<20 {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") {
				if b, err := os.ReadFile(p); err == nil {
					corpus = append(corpus, b...)
				}
			}
			return nil
		})
	}
	off := rng.IntN(len(corpus) - n)
	return slices.Clone(corpus[off : off+n])
}

// goSrcTree copies GOROOT/src once.
var goSrc string

func goSrcTree() string {
	if goSrc != "" {
		return goSrc
	}
	goSrc = filepath.Join(tmp, "gosrc")
	must(exe(tmp, nil, "cp", "-r", filepath.Join(goroot(), "src"), goSrc))
	return goSrc
}

// smallTree makes cfg.smallFiles files of 50–400 bytes, 100 to a directory.
var small string

func smallTree() string {
	if small != "" {
		return small
	}
	small = filepath.Join(tmp, "small")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < cfg.smallFiles; i++ {
		d := filepath.Join(small, fmt.Sprintf("d%03d", i/10000), fmt.Sprintf("e%02d", i/100%100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				panic(benchErr{err})
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), sourceText(50+rng.IntN(350), rng), 0o644); err != nil {
			panic(benchErr{err})
		}
	}
	return small
}

func fileCount(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
