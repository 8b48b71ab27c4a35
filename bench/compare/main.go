// Command compare measures ckpt against the tool a user would otherwise
// reach for (git, zstd, a plain write+fsync) in one run, interleaved, over
// several repetitions, and prints each figure as min/median/max of the
// per-repetition ratio ckpt ÷ alternative, with the load average.
//
//	go run ./bench/compare [--quick] [--reps N] [--markdown] [--only SUBSTR] [--keep]
//
// It builds ckpt from this checkout and makes its own trees in a temporary
// directory: a copy of $(go env GOROOT)/src and a tree of many small files.
// The machine may be shared: read the ratios, not the absolute times.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/controller"
)

type config struct {
	quick    bool
	reps     int
	markdown bool
	only     string
	keep     bool
	// sizes, smaller in quick mode
	smallFiles int   // files in the small-files tree
	bigBytes   int64 // the large source-like file
	listTurns  int
	sessions   int
	storeTurns int
}

// row is one figure of the table.
type row struct {
	name    string
	alt     string // the alternative; empty when there is none
	unit    string // "s", "ms", "MiB", "MB", "KB", "MB/s"
	target  string
	ckpt    []float64
	other   []float64 // same length as ckpt when alt != ""
	note    string
	err     string
	higherB bool // a higher ckpt value is better (throughput)
}

var (
	cfg   config
	tmp   string
	ckpt  string
	rows  []*row
	loads []string
)

func main() {
	flag.BoolVar(&cfg.quick, "quick", false, "smaller trees and fewer repetitions (a few minutes)")
	flag.IntVar(&cfg.reps, "reps", 0, "repetitions per figure (default 5, quick 3)")
	flag.BoolVar(&cfg.markdown, "markdown", false, "print the table as Markdown (for README.md)")
	flag.StringVar(&cfg.only, "only", "", "run only the groups whose name contains this (capture, scan, rewind, store, large, list, session)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory")
	flag.Parse()
	if cfg.reps == 0 {
		cfg.reps = 5
		if cfg.quick {
			cfg.reps = 3
		}
	}
	cfg.smallFiles, cfg.bigBytes, cfg.listTurns, cfg.sessions, cfg.storeTurns = 100_000, 1<<30, 50_000, 1500, 100
	if cfg.quick {
		cfg.smallFiles, cfg.bigBytes, cfg.listTurns, cfg.sessions, cfg.storeTurns = 20_000, 128<<20, 5_000, 150, 20
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run() error {
	var err error
	tmp, err = os.MkdirTemp("", "ckpt-compare-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	for _, tool := range []string{"git", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (apt-get install %s)", tool, tool)
		}
	}
	ckpt = filepath.Join(tmp, "ckpt")
	b := exec.Command("go", "build", "-o", ckpt, "./cmd/ckpt")
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	b.Stderr = os.Stderr
	if err := b.Run(); err != nil {
		return fmt.Errorf("build ckpt: %w", err)
	}
	start := load()
	groups := []struct {
		name string
		fn   func() error
	}{
		{"capture", benchCapture},
		{"scan", benchScan},
		{"rewind", benchRewind},
		{"store", benchStoreBytes},
		{"large", benchLarge},
		{"list", benchList},
		{"session", benchSessions},
	}
	for _, g := range groups {
		if cfg.only != "" && !strings.Contains(g.name, cfg.only) {
			continue
		}
		progress("%s (load %s)", g.name, load())
		if err := g.fn(); err != nil {
			rows = append(rows, &row{name: g.name, err: err.Error()})
			progress("%s: %v", g.name, err)
		}
	}
	end := load()
	printTable(start, end)
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", args...)
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// result is one process run.
type result struct {
	wall   time.Duration
	cpu    time.Duration
	maxRSS int64 // bytes
	out    []byte
}

// exe runs a command; env adds to the environment, dir is its directory.
func exe(dir string, env []string, name string, args ...string) (result, error) {
	return exeRSS(false, dir, env, name, args...)
}

// exeRSS is exe; with rss it runs the command under /usr/bin/time to read
// its peak RSS: a child's own rusage also counts the RSS this (large)
// process had when it forked.
func exeRSS(rss bool, dir string, env []string, name string, args ...string) (result, error) {
	var rssFile string
	if rss {
		rssFile = filepath.Join(tmp, "rss.txt")
		args = append([]string{"-f", "%M %U %S", "-o", rssFile, name}, args...)
		name = "/usr/bin/time"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(t), out: out.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		r.maxRSS = ru.Maxrss * 1024
	}
	if rss {
		// The command's own peak RSS and CPU, not /usr/bin/time's.
		b, _ := os.ReadFile(rssFile)
		f := strings.Fields(string(b))
		r.maxRSS, r.cpu = -1, -1
		if len(f) >= 3 {
			kb, _ := strconv.ParseInt(f[len(f)-3], 10, 64)
			u, _ := strconv.ParseFloat(f[len(f)-2], 64)
			s, _ := strconv.ParseFloat(f[len(f)-1], 64)
			r.maxRSS, r.cpu = kb*1024, time.Duration((u+s)*1e9)
		}
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %v: %s", name, strings.Join(trim(args), " "), err, strings.TrimSpace(errb.String()))
	}
	return r, nil
}

func trim(args []string) []string {
	if len(args) > 6 {
		return append(slices.Clip(args[:6]), fmt.Sprintf("... (%d more)", len(args)-6))
	}
	return args
}

// ck runs ckpt on workspace ws with store st.
func ck(ws, st string, args ...string) (result, error) {
	return exe(ws, ckEnv, ckpt, append([]string{"--workspace", ws, "--store", st}, args...)...)
}

var ckEnv = []string{"CKPT_SESSION=", "CKPT_HOME=", "CKPT_WORKSPACE="}

func gitEnv(gitDir, ws string) []string {
	return []string{"GIT_DIR=" + gitDir, "GIT_WORK_TREE=" + ws, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b"}
}

func git(gitDir, ws string, args ...string) (result, error) {
	return exe(ws, gitEnv(gitDir, ws), "git", args...)
}

func must(r result, err error) result {
	if err != nil {
		panic(benchErr{err})
	}
	return r
}

type benchErr struct{ error }

// guard turns a must failure inside fn into an error.
func guard(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(benchErr)
			if !ok {
				panic(r)
			}
			err = be.error
		}
	}()
	fn()
	return nil
}

func turnNumber(r result) int {
	var v struct {
		Turn int `json:"turn"`
	}
	if err := json.Unmarshal(r.out, &v); err != nil {
		panic(benchErr{fmt.Errorf("turn output %q: %v", r.out, err)})
	}
	return v.Turn
}

// interleave runs a and b once per repetition, alternating which goes first.
func interleave(rep int, a, b func()) {
	if rep%2 == 0 {
		a()
		b()
	} else {
		b()
		a()
	}
}

func ms(d time.Duration) float64  { return float64(d) / 1e6 }
func sec(d time.Duration) float64 { return d.Seconds() }
func mib(b int64) float64         { return float64(b) / (1 << 20) }

// sourceText returns n bytes of Go source cut from GOROOT/src.
var corpus []byte

func sourceText(n int, rng *rand.Rand) []byte {
	if corpus == nil {
		root := filepath.Join(runtime.GOROOT(), "src")
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
	must(exe(tmp, nil, "cp", "-r", filepath.Join(runtime.GOROOT(), "src"), goSrc))
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

// benchCapture: one 8 KiB file per process against git hash-object -w;
// 2,000 paths in one call against git add of the same paths; in-process
// Controller.Capture against one write+fsync.
func benchCapture() error {
	return guard(func() {
		rng := rand.New(rand.NewPCG(3, 4))
		ws := filepath.Join(tmp, "cap1")
		os.MkdirAll(ws, 0o755)
		st, gd := filepath.Join(tmp, "cap1.store"), filepath.Join(tmp, "cap1.git")
		must(git(gd, ws, "init", "-q"))
		must(ck(ws, st, "turn", "capture one file"))
		r := &row{name: "`ckpt capture` one 8 KiB file, whole process, p50", alt: "`git hash-object -w`", unit: "ms", target: "≤ 1.5×"}
		const per = 15
		n := 0
		for rep := 0; rep < cfg.reps; rep++ {
			var a, b []float64
			for i := 0; i < per; i++ {
				n++
				f1, f2 := fmt.Sprintf("c%05d.go", n), fmt.Sprintf("g%05d.go", n)
				os.WriteFile(filepath.Join(ws, f1), sourceText(8192, rng), 0o644)
				os.WriteFile(filepath.Join(ws, f2), sourceText(8192, rng), 0o644)
				interleave(i, func() { a = append(a, ms(must(ck(ws, st, "capture", f1)).wall)) },
					func() { b = append(b, ms(must(git(gd, ws, "hash-object", "-w", f2)).wall)) })
			}
			r.ckpt, r.other = append(r.ckpt, median(a)), append(r.other, median(b))
		}
		rows = append(rows, r)

		src := goSrcTree()
		var paths []string
		filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".go") && len(paths) < 2000 {
				rel, _ := filepath.Rel(src, p)
				paths = append(paths, rel)
			}
			return nil
		})
		r = &row{name: fmt.Sprintf("`ckpt capture` of %d paths in one call (Go src)", len(paths)), alt: "`git add` of the same paths", unit: "s", target: "≤ 0.5×"}
		for rep := 0; rep < cfg.reps; rep++ {
			st, gd := filepath.Join(tmp, fmt.Sprintf("capN%d.store", rep)), filepath.Join(tmp, fmt.Sprintf("capN%d.git", rep))
			must(ck(src, st, "--session", "capN", "turn", "many"))
			must(git(gd, src, "init", "-q"))
			interleave(rep, func() {
				r.ckpt = append(r.ckpt, sec(must(ck(src, st, append([]string{"--session", "capN", "capture"}, paths...)...)).wall))
			},
				func() {
					r.other = append(r.other, sec(must(git(gd, src, append([]string{"add", "--"}, paths...)...)).wall))
				})
			os.RemoveAll(st)
			os.RemoveAll(gd)
		}
		rows = append(rows, r)

		r = &row{name: "in-process `Controller.Capture` of a new 8 KiB file", alt: "one write+fsync of 8 KiB", unit: "ms", target: "≤ 1.2×"}
		ctx := context.Background()
		ws2 := filepath.Join(tmp, "cap2")
		os.MkdirAll(ws2, 0o755)
		c, err := controller.Open(ctx, controller.Options{Workspace: ws2, Store: filepath.Join(tmp, "cap2.store"), NoAutoRetention: true})
		if err != nil {
			panic(benchErr{err})
		}
		defer c.Close()
		if _, err := c.BeginTurn(ctx, "in-process"); err != nil {
			panic(benchErr{err})
		}
		floorDir := filepath.Join(tmp, "floor")
		os.MkdirAll(floorDir, 0o755)
		const ops = 100
		for rep := 0; rep < cfg.reps; rep++ {
			var a, b []float64
			for i := 0; i < ops; i++ {
				n++
				p := filepath.Join(ws2, fmt.Sprintf("f%06d.go", n))
				data := sourceText(8192, rng)
				os.WriteFile(p, data, 0o644)
				interleave(i, func() {
					t := time.Now()
					if _, err := c.Capture(ctx, p); err != nil {
						panic(benchErr{err})
					}
					a = append(a, ms(time.Since(t)))
				}, func() {
					t := time.Now()
					f, err := os.Create(filepath.Join(floorDir, fmt.Sprintf("f%06d", n)))
					if err == nil {
						_, err = f.Write(data)
						if err == nil {
							err = f.Sync()
						}
						f.Close()
					}
					if err != nil {
						panic(benchErr{err})
					}
					b = append(b, ms(time.Since(t)))
				})
			}
			r.ckpt, r.other = append(r.ckpt, median(a)), append(r.other, median(b))
		}
		rows = append(rows, r)
	})
}

// benchScan: first scan, unchanged re-scan and re-scan after 100 changes,
// on Go's src and on the small-files tree, against git.
func benchScan() error {
	return guard(func() {
		scanTree("Go src", goSrcTree(), "≤ 2×")
		scanTree(fmt.Sprintf("%d small files", fileCount(smallTree())), smallTree(), "≤ 2×")
	})
}

func scanTree(label, ws, rssTarget string) {
	first := &row{name: "first scan (`turn --scan`), " + label, alt: "`git add -A` into a fresh repo", unit: "s", target: "≤ 0.5×"}
	rss := &row{name: "first scan, " + label + ", peak RSS", alt: "`git add -A`", unit: "MiB", target: rssTarget}
	var st, gd string
	for rep := 0; rep < cfg.reps; rep++ {
		st, gd = filepath.Join(tmp, fmt.Sprintf("scan%d.store", rep)), filepath.Join(tmp, fmt.Sprintf("scan%d.git", rep))
		must(git(gd, ws, "init", "-q"))
		interleave(rep, func() {
			r := must(exeRSS(true, ws, ckEnv, ckpt, "--workspace", ws, "--store", st, "--session", "scan", "turn", "--scan", "first"))
			first.ckpt, rss.ckpt = append(first.ckpt, sec(r.wall)), append(rss.ckpt, mib(r.maxRSS))
		}, func() {
			r := must(exeRSS(true, ws, gitEnv(gd, ws), "git", "add", "-A"))
			first.other, rss.other = append(first.other, sec(r.wall)), append(rss.other, mib(r.maxRSS))
		})
		if rep < cfg.reps-1 {
			os.RemoveAll(st)
			os.RemoveAll(gd)
		}
	}
	rows = append(rows, first, rss)
	must(git(gd, ws, "commit", "-q", "-m", "first"))
	// The stat cache distrusts entries taken within 2 s of a file's mtime
	// (git's racy rule): wait, then settle both once.
	time.Sleep(2100 * time.Millisecond)
	must(ck(ws, st, "--session", "scan", "turn", "--scan", "settle"))
	must(git(gd, ws, "status", "--porcelain"))
	same := &row{name: "unchanged re-scan, " + label, alt: "`git status`", unit: "ms", target: "≤ 1.0×"}
	for rep := 0; rep < cfg.reps; rep++ {
		interleave(rep, func() {
			same.ckpt = append(same.ckpt, ms(must(ck(ws, st, "--session", "scan", "turn", "--scan", "same")).wall))
		},
			func() { same.other = append(same.other, ms(must(git(gd, ws, "status", "--porcelain")).wall)) })
	}
	rows = append(rows, same)
	var files []string
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(5, 6))
	mod := &row{name: "re-scan after modifying 100 files, " + label, alt: "`git add -A && git commit`", unit: "ms", target: "≤ 1.0×"}
	for rep := 0; rep < cfg.reps; rep++ {
		for i := 0; i < 100; i++ {
			f, err := os.OpenFile(files[rng.IntN(len(files))], os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				fmt.Fprintf(f, "\n// edit %d %d\n", rep, i)
				f.Close()
			}
		}
		interleave(rep, func() {
			mod.ckpt = append(mod.ckpt, ms(must(ck(ws, st, "--session", "scan", "turn", "--scan", "mod")).wall))
		},
			func() {
				a := must(git(gd, ws, "add", "-A"))
				b := must(git(gd, ws, "commit", "-q", "-m", "mod"))
				mod.other = append(mod.other, ms(a.wall+b.wall))
			})
	}
	rows = append(rows, mod)
	os.RemoveAll(st)
	os.RemoveAll(gd)
	// Undo the appended edits so the next user of the tree sees it as copied.
	if ws == goSrc {
		os.RemoveAll(goSrc)
		goSrc = ""
	} else {
		os.RemoveAll(small)
		small = ""
	}
}

// benchRewind: rewind of 1,000 modified 8 KiB files against git checkout.
func benchRewind() error {
	return guard(func() {
		rng := rand.New(rand.NewPCG(7, 8))
		ws := filepath.Join(tmp, "rw")
		st, gd := filepath.Join(tmp, "rw.store"), filepath.Join(tmp, "rw.git")
		var rels []string
		for i := 0; i < 1000; i++ {
			rel := fmt.Sprintf("d%d/f%04d.go", i/100, i)
			os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755)
			os.WriteFile(filepath.Join(ws, rel), sourceText(8192, rng), 0o644)
			rels = append(rels, rel)
		}
		must(git(gd, ws, "init", "-q"))
		must(git(gd, ws, "add", "-A"))
		must(git(gd, ws, "commit", "-q", "-m", "base"))
		modify := func() {
			for _, rel := range rels {
				f, _ := os.OpenFile(filepath.Join(ws, rel), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("// modified\n")
				f.Close()
			}
		}
		r := &row{name: "rewind of 1,000 modified 8 KiB files", alt: "`git checkout -- .`", unit: "s", target: "≤ 1.0×"}
		for rep := 0; rep < cfg.reps; rep++ {
			interleave(rep, func() {
				t := turnNumber(must(ck(ws, st, "--json", "turn", "rewind")))
				must(ck(ws, st, append([]string{"capture"}, rels...)...))
				modify()
				r.ckpt = append(r.ckpt, sec(must(ck(ws, st, "rewind", strconv.Itoa(t), "--scope", "code")).wall))
			}, func() {
				modify()
				r.other = append(r.other, sec(must(git(gd, ws, "checkout", "--", ".")).wall))
			})
		}
		rows = append(rows, r)
	})
}

// benchStoreBytes: a session of N turns each changing 100 of 1,000 files,
// against a shadow git repository committed each turn and then gc'd.
func benchStoreBytes() error {
	return guard(func() {
		rng := rand.New(rand.NewPCG(9, 10))
		ws := filepath.Join(tmp, "sb")
		st, gd := filepath.Join(tmp, "sb.store"), filepath.Join(tmp, "sb.git")
		var rels []string
		for i := 0; i < 1000; i++ {
			rel := fmt.Sprintf("d%d/f%04d.go", i/100, i)
			os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755)
			os.WriteFile(filepath.Join(ws, rel), sourceText(2048+rng.IntN(14336), rng), 0o644)
			rels = append(rels, rel)
		}
		must(git(gd, ws, "init", "-q"))
		must(git(gd, ws, "add", "-A"))
		must(git(gd, ws, "commit", "-q", "-m", "base"))
		for t := 0; t < cfg.storeTurns; t++ {
			must(ck(ws, st, "turn", fmt.Sprintf("turn %d", t)))
			pick := rng.Perm(len(rels))[:100]
			var args []string
			for _, i := range pick {
				args = append(args, rels[i])
			}
			must(ck(ws, st, append([]string{"capture"}, args...)...))
			for _, rel := range args {
				p := filepath.Join(ws, rel)
				b, _ := os.ReadFile(p)
				at := rng.IntN(len(b))
				if k := bytes.IndexByte(b[at:], '\n'); k >= 0 {
					at += k + 1
				} else {
					at = len(b)
				}
				edit := append(slices.Clip(b[:at]), sourceText(40+rng.IntN(200), rng)...)
				os.WriteFile(p, append(edit, b[at:]...), 0o644)
			}
			must(git(gd, ws, "add", "-A"))
			must(git(gd, ws, "commit", "-q", "-m", fmt.Sprintf("turn %d", t)))
		}
		must(ck(ws, st, "turn", "last")) // records the end states
		must(git(gd, ws, "gc", "-q", "--aggressive", "--prune=now"))
		r := &row{name: fmt.Sprintf("store bytes, %d turns × 100 of 1,000 files changed", cfg.storeTurns), alt: "shadow git after `git gc`", unit: "MB", target: "≤ 1.0×"}
		r.ckpt, r.other = []float64{float64(dirBytes(st)) / 1e6}, []float64{float64(dirBytes(gd)) / 1e6}
		rows = append(rows, r)
	})
}

// benchLarge: capture of one large source-like file against zstd -3 -T1.
func benchLarge() error {
	return guard(func() {
		rng := rand.New(rand.NewPCG(11, 12))
		ws := filepath.Join(tmp, "big")
		os.MkdirAll(ws, 0o755)
		f, err := os.Create(filepath.Join(ws, "big.txt"))
		if err != nil {
			panic(benchErr{err})
		}
		for w := int64(0); w < cfg.bigBytes; w += 8 << 20 {
			f.Write(sourceText(8<<20, rng))
		}
		f.Close()
		r := &row{name: fmt.Sprintf("capture of a %d MiB source-like text file", cfg.bigBytes>>20), alt: "`zstd -3 -T1`", unit: "MB/s", target: "≥ 1.0×", higherB: true}
		mbps := func(d time.Duration) float64 { return float64(cfg.bigBytes) / 1e6 / d.Seconds() }
		for rep := 0; rep < cfg.reps; rep++ {
			st := filepath.Join(tmp, "big.store")
			must(ck(ws, st, "turn", "big"))
			interleave(rep, func() { r.ckpt = append(r.ckpt, mbps(must(ck(ws, st, "capture", "big.txt")).wall)) },
				func() {
					r.other = append(r.other, mbps(must(exe(ws, nil, "zstd", "-3", "-T1", "-q", "-f", "big.txt", "-o", filepath.Join(tmp, "big.zst"))).wall))
				})
			os.RemoveAll(st)
			os.Remove(filepath.Join(tmp, "big.zst"))
		}
		rows = append(rows, r)
		os.RemoveAll(ws)
	})
}

// benchList: ckpt list of a session with many turns, as a whole process.
func benchList() error {
	return guard(func() {
		ctx := context.Background()
		ws, st := filepath.Join(tmp, "list"), filepath.Join(tmp, "list.store")
		os.MkdirAll(ws, 0o755)
		os.WriteFile(filepath.Join(ws, "a.go"), []byte("package a\n"), 0o644)
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: st, NoAutoRetention: true})
		if err != nil {
			panic(benchErr{err})
		}
		for t := 0; t < cfg.listTurns; t++ {
			if _, err := c.BeginTurn(ctx, fmt.Sprintf("prompt number %d: change something", t)); err != nil {
				panic(benchErr{err})
			}
			if t%10 == 0 {
				os.WriteFile(filepath.Join(ws, "a.go"), []byte(fmt.Sprintf("package a // %d\n", t)), 0o644)
				if _, err := c.Capture(ctx, filepath.Join(ws, "a.go")); err != nil {
					panic(benchErr{err})
				}
			}
		}
		c.Close()
		all := &row{name: fmt.Sprintf("`ckpt list` at %d turns, every row, wall", cfg.listTurns), unit: "ms", target: "≤ 50 ms"}
		allRSS := &row{name: fmt.Sprintf("`ckpt list` at %d turns, every row, peak RSS", cfg.listTurns), unit: "MiB", target: "≤ 30 MiB"}
		page := &row{name: fmt.Sprintf("`ckpt list --limit 50` at %d turns, wall", cfg.listTurns), unit: "ms", target: "≤ 50 ms"}
		pageRSS := &row{name: fmt.Sprintf("`ckpt list --limit 50` at %d turns, peak RSS", cfg.listTurns), unit: "MiB", target: "≤ 30 MiB"}
		for rep := 0; rep < cfg.reps; rep++ {
			r := must(exeRSS(true, ws, ckEnv, ckpt, "--workspace", ws, "--store", st, "list"))
			all.ckpt, allRSS.ckpt = append(all.ckpt, ms(r.wall)), append(allRSS.ckpt, mib(r.maxRSS))
			if r, err := exeRSS(true, ws, ckEnv, ckpt, "--workspace", ws, "--store", st, "list", "--limit", "50"); err == nil {
				page.ckpt, pageRSS.ckpt = append(page.ckpt, ms(r.wall)), append(pageRSS.ckpt, mib(r.maxRSS))
			} else {
				page.err, pageRSS.err = "no --limit in this build", "no --limit in this build"
			}
		}
		rows = append(rows, all, allRSS, page, pageRSS)
	})
}

// benchSessions: the footprint of a small session, and the store-wide
// commands at many sessions.
func benchSessions() error {
	return guard(func() {
		ctx := context.Background()
		st := filepath.Join(tmp, "ses.store")
		one := &row{name: "disk per session (1 turn, 1 small capture)", unit: "KB", target: "≤ 16 KB"}
		for i := 0; i < cfg.sessions; i++ {
			ws := filepath.Join(tmp, "ses", fmt.Sprintf("w%05d", i))
			os.MkdirAll(ws, 0o755)
			os.WriteFile(filepath.Join(ws, "a.go"), []byte(fmt.Sprintf("package a // %d\n", i)), 0o644)
			if i < cfg.reps {
				// The first few as the user would: whole processes.
				must(ck(ws, st, "turn", "one"))
				must(ck(ws, st, "capture", "a.go"))
				one.ckpt = append(one.ckpt, float64(dirBytes(controllerSessionDir(st, ws)))/1e3)
				continue
			}
			c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: st, NoAutoRetention: true})
			if err != nil {
				panic(benchErr{err})
			}
			_, err = c.BeginTurn(ctx, "one")
			if err == nil {
				_, err = c.Capture(ctx, filepath.Join(ws, "a.go"))
			}
			c.Close()
			if err != nil {
				panic(benchErr{err})
			}
		}
		rows = append(rows, one)
		ws := filepath.Join(tmp, "ses", "w00000")
		for _, cmd := range [][]string{{"sessions"}, {"gc"}, {"prune", "--dry-run"}} {
			r := &row{name: fmt.Sprintf("`ckpt %s` at %d sessions", strings.Join(cmd, " "), cfg.sessions), unit: "s", target: "≤ 0.3 s at 10,000"}
			for rep := 0; rep < cfg.reps; rep++ {
				res, err := ck(ws, st, cmd...)
				if err != nil {
					r.err = err.Error()
					break
				}
				r.ckpt = append(r.ckpt, sec(res.wall))
			}
			rows = append(rows, r)
		}
	})
}

func controllerSessionDir(store, ws string) string {
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		real = ws
	}
	return filepath.Join(store, "sessions", controller.WorkspaceSession(real))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread(v []float64) (lo, mid, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	return slices.Min(v), median(v), slices.Max(v)
}

func num(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}

func rng3(v []float64, unit string) string {
	if len(v) == 0 {
		return "—"
	}
	lo, mid, hi := spread(v)
	if len(v) == 1 {
		return num(mid) + " " + unit
	}
	return fmt.Sprintf("%s / %s / %s %s", num(lo), num(mid), num(hi), unit)
}

func ratioCell(r *row) string {
	if r.alt == "" || len(r.other) == 0 {
		return "—"
	}
	var ratios []float64
	for i := range r.ckpt {
		if i < len(r.other) && r.other[i] > 0 {
			ratios = append(ratios, r.ckpt[i]/r.other[i])
		}
	}
	lo, mid, hi := spread(ratios)
	if len(ratios) == 1 {
		return fmt.Sprintf("**%.2f×**", mid)
	}
	return fmt.Sprintf("%.2f / **%.2f** / %.2f ×", lo, mid, hi)
}

func printTable(start, end string) {
	head := fmt.Sprintf("ckpt %s, %s/%s, %d cores, %d repetitions%s; load average %s at start, %s at end",
		gitRev(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cfg.reps, map[bool]string{true: " (--quick)", false: ""}[cfg.quick], start, end)
	if cfg.markdown {
		fmt.Println(head + ". Cells are min / median / max over the repetitions; the ratio is ckpt ÷ the alternative, per repetition (for MB/s, above 1 is faster).")
		fmt.Println()
		fmt.Println("| figure | ckpt | alternative | ratio | target |")
		fmt.Println("|---|---|---|---|---|")
		for _, r := range rows {
			if r.err != "" {
				fmt.Printf("| %s | not measured: %s | | | %s |\n", r.name, oneLine(r.err), r.target)
				continue
			}
			alt := "—"
			if r.alt != "" {
				alt = r.alt + ": " + rng3(r.other, r.unit)
			}
			fmt.Printf("| %s | %s | %s | %s | %s |\n", r.name, rng3(r.ckpt, r.unit), alt, ratioCell(r), r.target)
		}
		return
	}
	fmt.Println(head)
	fmt.Println("cells: min / median / max; ratio = ckpt ÷ alternative per repetition")
	for _, r := range rows {
		fmt.Println()
		fmt.Println(r.name)
		if r.err != "" {
			fmt.Println("  not measured:", oneLine(r.err))
			continue
		}
		fmt.Printf("  ckpt         %s\n", rng3(r.ckpt, r.unit))
		if r.alt != "" {
			fmt.Printf("  %-12s %s\n", "alternative", r.alt+": "+rng3(r.other, r.unit))
			fmt.Printf("  %-12s %s   (target %s)\n", "ratio", strings.ReplaceAll(ratioCell(r), "*", ""), r.target)
		} else {
			fmt.Printf("  %-12s %s\n", "target", r.target)
		}
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
