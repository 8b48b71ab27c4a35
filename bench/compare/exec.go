//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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
