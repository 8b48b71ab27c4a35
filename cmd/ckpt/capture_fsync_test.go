package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A whole `ckpt capture` process keeps the durability the cost work must
// not trade away, seen in the system calls it makes (strace -f -y, all
// threads, in order; skipped without strace): the blob's commit is
// fsynced (blobs.db-wal) before anything is written to the index, so no
// index row can name a blob a power cut loses; and the index's writes are
// fsynced before the process exits (the last close checkpoints the WAL),
// so a capture that reported success is on disk. docs/performance.md
// lists each fsync of a capture.
func TestCaptureProcessFsyncOrder(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	t.Parallel()
	ws, store := t.TempDir(), t.TempDir()
	if code, _, errs := ckptRun(t, ws, store, "turn", "t1"); code != exitOK {
		t.Fatalf("turn: %s", errs)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.go"), benchSource(1), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,pwrite64", "-o", trace,
		ckptBinary(t), "--workspace", ws, "--store", store, "capture", filepath.Join(ws, "a.go"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace ckpt capture: %v: %s", err, out)
	}
	text, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// Each line is "PID call(FD</path>, ...) = N" or its unfinished half.
	blobSync, firstIndexWrite, lastIndexWrite, lastIndexSync := -1, -1, -1, -1
	for i, line := range strings.Split(string(text), "\n") {
		call, file := straceCallFile(line)
		switch {
		case call == "fsync" || call == "fdatasync":
			if strings.HasSuffix(file, filepath.Join("blobs", "blobs.db-wal")) && blobSync < 0 {
				blobSync = i
			}
			if strings.HasSuffix(file, "index.db-wal") || strings.HasSuffix(file, "index.db") {
				lastIndexSync = i
			}
		case call == "pwrite64" && (strings.HasSuffix(file, "index.db-wal") || strings.HasSuffix(file, "index.db")):
			if firstIndexWrite < 0 {
				firstIndexWrite = i
			}
			lastIndexWrite = i
		}
	}
	switch {
	case blobSync < 0:
		t.Fatalf("no fsync of blobs.db-wal:\n%s", text)
	case firstIndexWrite < 0:
		t.Fatalf("nothing written to the index:\n%s", text)
	case firstIndexWrite < blobSync:
		t.Errorf("the index was written (line %d) before the blob's commit was fsynced (line %d):\n%s", firstIndexWrite+1, blobSync+1, text)
	case lastIndexSync < lastIndexWrite:
		t.Errorf("the index's last write (line %d) was not fsynced before exit:\n%s", lastIndexWrite+1, text)
	}
}

// straceCallFile returns the system call and the path of its first
// argument's descriptor in one line of strace -f -y output ("" when the
// line is not a call on a file descriptor).
func straceCallFile(line string) (call, file string) {
	_, rest, ok := strings.Cut(line, " ")
	if !ok {
		return "", ""
	}
	call, args, ok := strings.Cut(strings.TrimSpace(rest), "(")
	if !ok {
		return "", ""
	}
	_, path, ok := strings.Cut(args, "<")
	if !ok {
		return call, ""
	}
	path, _, _ = strings.Cut(path, ">")
	return call, path
}
