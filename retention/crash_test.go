//go:build unix

package retention_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// crashRig is one store and workspace whose default session a crash test
// drives through the real binary, killing it with SIGKILL at random
// moments, with the model of what the workspace held at the start of every
// turn.
type crashRig struct {
	t      *testing.T
	rng    *rand.Rand
	c      cli
	starts []tree // the workspace at the start of each turn, by number
	cur    tree   // the workspace now
	first  int    // turns before this one are pruned
	gen    int    // edits so far, to make every content unique

	last           map[string]time.Duration // the last whole run of each command
	killed, missed int                      // victims killed mid-run, victims that finished first
	midway         int                      // kills that left visible work half done (see the rounds)
	strays         map[string]bool          // object files left without a blob row
	leftovers      int                      // removed sessions' directories left behind
}

func newCrashRig(t *testing.T, rng *rand.Rand) *crashRig {
	t.Helper()
	r := &crashRig{t: t, rng: rng, c: newCLI(t, t.TempDir(), t.TempDir(), "default"),
		last: map[string]time.Duration{}, strays: map[string]bool{}}
	r.cur = tree{"a.txt": nil, "bin/b.dat": nil, "run.sh": nil, "new/c.txt": nil}
	r.edit()
	return r
}

// recycle starts over in a new store and workspace, keeping the counts,
// so the checks after each round stay cheap.
func (r *crashRig) recycle() {
	os.RemoveAll(r.c.store)
	os.RemoveAll(r.c.ws)
	fresh := newCrashRig(r.t, r.rng)
	fresh.last, fresh.killed, fresh.missed, fresh.gen = r.last, r.killed, r.missed, r.gen
	fresh.midway, fresh.strays, fresh.leftovers = r.midway, r.strays, r.leftovers
	*r = *fresh
}

func randBytes(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return string(b)
}

// edit changes the workspace as an agent would: new text with CRLF line
// ends, new binary bytes (now and then over 1 MiB, so the blob is a file
// of its own), a script whose executable bit flips, a file created and
// deleted. a.txt changes every time, so no two turns start alike.
func (r *crashRig) edit() {
	r.gen++
	g, rng := r.gen, r.rng
	next := r.cur.clone()
	next["a.txt"] = &file{data: fmt.Sprintf("edit %d\r\n%s\r\n", g, strings.Repeat("line\r\n", rng.IntN(50))), mode: 0o644}
	if next["bin/b.dat"] == nil || rng.IntN(3) > 0 {
		n := 1 + rng.IntN(3000)
		if rng.IntN(8) == 0 {
			n = 1<<20 + rng.IntN(1<<14)
		}
		next["bin/b.dat"] = &file{data: randBytes(rng, n), mode: 0o600}
	}
	switch sh := next["run.sh"]; {
	case sh == nil || rng.IntN(2) == 0:
		next["run.sh"] = &file{data: fmt.Sprintf("#!/bin/sh\necho %d\n", g), mode: 0o755}
	case rng.IntN(2) == 0:
		next["run.sh"] = &file{data: sh.data, mode: sh.mode ^ 0o111}
	}
	if rng.IntN(2) == 0 {
		next["new/c.txt"] = nil
	} else {
		next["new/c.txt"] = &file{data: fmt.Sprintf("created by edit %d\n", g), mode: 0o644}
	}
	writeTree(r.t, r.c.ws, next)
	r.cur = next
}

// run runs a command to the end (it must succeed) and remembers how long
// it took, to aim later kills of the same command inside its run.
func (r *crashRig) run(args ...string) string {
	r.t.Helper()
	start := time.Now()
	out := r.c.run(r.t, args...)
	r.last[args[0]] = time.Since(start)
	return out
}

// kill starts args and sends SIGKILL at a random moment of a typical run.
// A victim that finishes before the kill must have succeeded.
func (r *crashRig) kill(args ...string) {
	r.t.Helper()
	span := r.last[args[0]] * 5 / 4
	if span < 2*time.Millisecond {
		span = 20 * time.Millisecond
	}
	cmd := r.c.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	time.Sleep(time.Duration(r.rng.Int64N(int64(span))))
	cmd.Process.Kill()
	res := ended(args, cmd, cmd.Wait(), &stdout, &stderr)
	if res.killed {
		r.killed++
		return
	}
	r.missed++
	if res.code != 0 {
		r.t.Fatalf("victim finished before the kill, and failed:\n%s", res)
	}
	checkStderr(r.t, res)
}

func (r *crashRig) openTurn(n int) {
	r.t.Helper()
	if got := strings.TrimSpace(r.run("turn", fmt.Sprintf("prompt %d", n))); got != strconv.Itoa(n) {
		r.t.Fatalf("ckpt turn printed %q, want %d", got, n)
	}
}

func (r *crashRig) capture() []string {
	paths := r.cur.paths()
	r.rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return append([]string{"capture"}, paths...)
}

// addTurn opens the next turn, captures every path and edits them all.
func (r *crashRig) addTurn() {
	r.t.Helper()
	r.openTurn(len(r.starts))
	r.starts = append(r.starts, r.cur.clone())
	r.run(r.capture()...)
	r.edit()
}

// snaps returns how many snapshots turn n has, reading the index directly.
func (r *crashRig) snaps(n int) int {
	r.t.Helper()
	x := r.index()
	defer x.Close()
	cp, err := x.Turn(context.Background(), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return len(cp.Files)
}

// prunedTurns counts the session's pruned turns, reading the index directly.
func (r *crashRig) prunedTurns() int {
	r.t.Helper()
	x := r.index()
	defer x.Close()
	recs, err := x.TurnRecords(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Pruned {
			n++
		}
	}
	return n
}

// pending reports whether a rewind or undo is planned and not finished.
func (r *crashRig) pending() bool {
	r.t.Helper()
	x := r.index()
	defer x.Close()
	_, err := x.PendingOp(context.Background())
	return err == nil
}

func (r *crashRig) index() *checkpoints.Index {
	r.t.Helper()
	return r.c.index(r.t)
}

func (r *crashRig) blobCount() int64 {
	r.t.Helper()
	d, err := cas.OpenDisk(context.Background(), checkpoints.BlobDir(r.c.store))
	if err != nil {
		r.t.Fatal(err)
	}
	defer d.Close()
	n, _, err := d.Usage(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

// check is what must hold after every round: verify is clean, and every
// turn not pruned rewinds to exactly what it started with (undone after).
func (r *crashRig) check() {
	r.t.Helper()
	r.c.verifyClean(r.t)
	checkRewinds(r.t, r.c, r.starts, r.first, r.cur)
	for _, f := range strayObjects(r.t, r.c.store) {
		r.strays[f] = true
	}
}

// crashCapture kills `ckpt turn` or `ckpt capture`.
func (r *crashRig) crashCapture() {
	t := r.t
	n := len(r.starts)
	if r.rng.IntN(3) == 0 {
		r.kill("turn", fmt.Sprintf("prompt %d", n))
		// The next command shows whether the turn was opened before the
		// kill. The kill of a fresh store's first turn may land before the
		// session exists, and list fails on a session the store never had.
		had, err := checkpoints.HasSession(r.c.store, r.c.session)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && !had {
			r.openTurn(n)
		} else {
			switch cps := r.c.list(t); {
			case len(cps) == n+1 && cps[n].Prompt == fmt.Sprintf("prompt %d", n):
			case len(cps) == n:
				r.openTurn(n)
			default:
				t.Fatalf("after killing `ckpt turn` with %d turns open, list shows %d: %+v", n, len(cps), cps)
			}
		}
	} else {
		r.openTurn(n)
	}
	r.starts = append(r.starts, r.cur.clone())
	if r.rng.IntN(3) > 0 {
		r.kill(r.capture()...)
		if k := r.snaps(n); k > 0 && k < len(r.cur) {
			r.midway++ // killed between the captures of two paths
		}
	}
	r.run(r.capture()...) // paths captured before the kill are no-ops now
	x := r.index()
	checkSnaps(t, x, n, r.cur)
	x.Close()
	r.edit()
}

// crashRewind kills `ckpt rewind` or `ckpt undo`. After the next command
// the workspace must be wholly on one side of the killed op.
func (r *crashRig) crashRewind() {
	t := r.t
	if len(r.starts) < 2 || r.rng.IntN(3) == 0 {
		r.addTurn()
	}
	turn := r.rng.IntN(len(r.starts))
	before, target := r.cur, r.starts[turn]
	rewind := []string{"rewind", strconv.Itoa(turn), "--scope", "code"}
	// atTarget reports which side of a killed op the workspace is on.
	atTarget := func(op string) bool {
		t.Helper()
		if r.pending() {
			r.midway++ // killed between the op's plan and its finish
		}
		r.run("list") // opening the session finishes or rolls back the killed op
		got := readTree(t, r.c.ws, before)
		switch {
		case before.diff(got) == "":
			return false
		case target.diff(got) == "":
			return true
		}
		t.Fatalf("killed %s to turn %d left the workspace half done:\nagainst before: %s\nagainst turn %d: %s",
			op, turn, before.diff(got), turn, target.diff(got))
		return false
	}
	if r.rng.IntN(2) == 0 {
		r.kill(rewind...)
		if atTarget("rewind") {
			r.run("undo")
		}
	} else {
		r.run(rewind...)
		if d := target.diff(readTree(t, r.c.ws, target)); d != "" {
			t.Fatalf("rewind to turn %d: %s", turn, d)
		}
		r.kill("undo")
		if atTarget("undo") {
			r.run("undo")
		}
	}
	if d := before.diff(readTree(t, r.c.ws, before)); d != "" {
		t.Fatalf("rewind to turn %d and undo: %s", turn, d)
	}
}

// crashPrune kills `ckpt prune --keep N` (which prunes, then collects), or
// the removal of a whole other session of the store (sessions rm).
func (r *crashRig) crashPrune() {
	t := r.t
	r.addTurn()
	if r.rng.IntN(4) == 0 {
		r.crashRemoveSession()
		return
	}
	keep := 1 + r.rng.IntN(3)
	prune := []string{"prune", "--keep", strconv.Itoa(keep)}
	before := r.prunedTurns()
	r.kill(prune...)
	if r.prunedTurns() > before {
		r.midway++ // killed after pruning (perhaps while collecting)
	}
	r.run(prune...)
	r.first = max(r.first, len(r.starts)-keep)
	for _, cp := range r.c.list(t) {
		if cp.Pruned != (cp.Turn < r.first) {
			t.Fatalf("after prune --keep %d of %d turns: turn %d pruned=%v", keep, len(r.starts), cp.Turn, cp.Pruned)
		}
	}
}

func (r *crashRig) crashRemoveSession() {
	t := r.t
	other := r.c
	other.session, other.ws = "other", t.TempDir()
	writeTree(t, other.ws, tree{"o.txt": {data: fmt.Sprintf("other %d", r.gen), mode: 0o644}})
	other.run(t, "turn", "elsewhere")
	other.run(t, "capture", "o.txt")
	writeTree(t, other.ws, tree{"o.txt": {data: "changed", mode: 0o644}})
	remove := []string{"sessions", "rm", "other"}
	r.kill(remove...)
	var sessions []struct {
		ID string `json:"id"`
	}
	r.c.runJSON(t, &sessions, "sessions")
	if slices.ContainsFunc(sessions, func(s struct {
		ID string `json:"id"`
	}) bool {
		return s.ID == "other"
	}) {
		r.run(remove...)
	}
	r.c.runJSON(t, &sessions, "sessions")
	if len(sessions) != 1 || sessions[0].ID != "default" {
		t.Fatalf("sessions after removing other: %+v", sessions)
	}
	if left, _ := filepath.Glob(filepath.Join(r.c.store, "sessions", ".removed-*")); len(left) > 0 {
		r.leftovers++ // killed between renaming the session away and deleting it
	}
}

// crashGC plants unreferenced blobs (small ones, and one over 1 MiB now
// and then) and kills `ckpt gc`. The next gc must leave no orphan.
func (r *crashRig) crashGC() {
	t := r.t
	ctx := context.Background()
	r.addTurn()
	d, err := cas.OpenDisk(ctx, checkpoints.BlobDir(r.c.store))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 {
		n := 1 + r.rng.IntN(2000)
		if i == 0 && r.rng.IntN(3) == 0 {
			n = 1<<20 + r.rng.IntN(1<<14)
		}
		if _, _, err := d.Put(ctx, strings.NewReader(randBytes(r.rng, n))); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	before := r.blobCount()
	r.kill("gc")
	if after := r.blobCount(); after < before {
		r.midway++ // killed after sweeping
	}
	r.run("gc")
	if n := r.c.verifyClean(t); n != 0 {
		t.Fatalf("gc after a killed gc left %d orphans", n)
	}
}

// TestCrash SIGKILLs the real binary at random moments of capture (and
// turn), rewind (and undo), prune (and session removal) and gc, 15 rounds
// each (200 with CKPT_LONG=1, 10 with -short). After every kill the next
// command must succeed, verify must be clean, and every checkpoint
// committed before the kill that retention did not prune must rewind to
// its exact bytes and modes. Set CKPT_CRASH_SEED to replay a run. A run in
// which no kill lands mid-command is skipped, not failed: that is luck.
func TestCrash(t *testing.T) {
	t.Parallel()
	rounds := 15
	if os.Getenv("CKPT_LONG") != "" {
		rounds = 200
	}
	if testing.Short() {
		rounds = 10
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CKPT_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("CKPT_CRASH_SEED=%d", seed)
	ckptBinary(t)
	for i, k := range []struct {
		name  string
		round func(*crashRig)
		reuse int // rounds before a fresh store, to keep the checks cheap
	}{
		{"capture", (*crashRig).crashCapture, 8},
		{"rewind", (*crashRig).crashRewind, 8},
		{"prune", (*crashRig).crashPrune, rounds},
		{"gc", (*crashRig).crashGC, 8},
	} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			r := newCrashRig(t, rand.New(rand.NewPCG(seed, uint64(i))))
			for round := range rounds {
				if round > 0 && round%k.reuse == 0 {
					r.recycle()
				}
				k.round(r)
				r.check()
			}
			t.Logf("%d rounds: %d victims killed mid-run (%d with work visibly half done), %d finished before the kill", rounds, r.killed, r.midway, r.missed)
			if len(r.strays) > 0 || r.leftovers > 0 {
				// Not failed here, as it depends on where a kill lands:
				// TestGCSweepsRowlessObjectFiles shows the leak for sure.
				t.Logf("leaked: %d object files no blob row names (still there after the next gc), %d removed sessions' directories", len(r.strays), r.leftovers)
			}
			if r.killed == 0 {
				// Where a kill lands is luck: that is no failure of ckpt's.
				t.Skipf("no kill landed in %d rounds, so no recovery was exercised (rerun with CKPT_CRASH_SEED=%d)", rounds, seed)
			}
		})
	}
}

// TestGCSweepsRowlessObjectFiles shows what a kill -9 of `ckpt gc` at
// the wrong moment leaks. cas.Disk.DeleteMany commits the deletion of a
// file blob's row, then unlinks its object file; a kill in between (and
// likewise a kill between a Put's rename into objects/ and its row's
// commit) leaves an object file no row names. cas/doc.go calls such files
// harmless and says "a collector may remove them", but no collector does:
// gc walks rows only, verify does not report them, and Usage (the quota)
// does not count them, so every such crash leaks a blob of over 1 MiB for
// good. TestCrash/gc meets this state by chance; here it is made exactly.
func TestGCSweepsRowlessObjectFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCLI(t, t.TempDir(), t.TempDir(), "default")
	writeTree(t, c.ws, tree{"a.txt": {data: "live", mode: 0o644}})
	c.run(t, "turn", "one")
	c.run(t, "capture", "a.txt")

	// A file blob nothing references, as a pruned turn leaves one.
	d, err := cas.OpenDisk(ctx, checkpoints.BlobDir(c.store))
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := d.Put(ctx, strings.NewReader(randBytes(rand.New(rand.NewPCG(1, 2)), 2<<20)))
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	object := filepath.Join(checkpoints.BlobDir(c.store), "objects", id.String()[:2], id.String())
	saved, err := os.ReadFile(object)
	if err != nil {
		t.Fatalf("the blob over 1 MiB has no object file: %v", err)
	}
	c.run(t, "gc")
	if _, err := os.Stat(object); err == nil {
		t.Fatal("gc did not delete the unreferenced blob's object file")
	}
	// The state a kill between DeleteMany's commit and its unlink leaves:
	// the row is gone, the file is not.
	if err := os.WriteFile(object, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	c.run(t, "gc")
	if n := c.verifyClean(t); n != 0 {
		t.Errorf("verify reports %d orphans", n)
	}
	if strays := strayObjects(t, c.store); len(strays) > 0 {
		t.Errorf("after gc, %d object files that no blob row names are still on disk (%d bytes): a crashed gc or Put leaks them for good, and the quota does not see them: %v",
			len(strays), len(saved), strays)
	}
}

// TestPruneSweepsRemovedSessionLeftovers shows the other thing a kill -9
// leaks: removing a session (`ckpt --session ID prune`) renames its
// directory to sessions/.removed-ID, then deletes that. A kill in between
// (TestCrash/prune meets it by chance) leaves the whole index there, and
// nothing deletes it later unless a session of the same id is removed
// again: not prune, not gc. Here the state is made exactly.
func TestPruneSweepsRemovedSessionLeftovers(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	other := newCLI(t, store, t.TempDir(), "other")
	writeTree(t, other.ws, tree{"o.txt": {data: "other", mode: 0o644}})
	other.run(t, "turn", "elsewhere")
	other.run(t, "capture", "o.txt")
	c := newCLI(t, store, t.TempDir(), "default")
	writeTree(t, c.ws, tree{"a.txt": {data: "live", mode: 0o644}})
	c.run(t, "turn", "one")
	c.run(t, "capture", "a.txt")

	// The state a kill between removeSession's rename and its RemoveAll
	// leaves: the session unregistered, its directory renamed.
	trash := filepath.Join(store, "sessions", ".removed-other")
	if err := checkpoints.Unregister(store, "other"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(checkpoints.SessionDir(store, "other"), trash); err != nil {
		t.Fatal(err)
	}
	c.run(t, "prune")
	c.run(t, "gc")
	if _, err := os.Stat(trash); err == nil {
		t.Errorf("%s, the index of a session whose removal was killed, is still there after prune and gc: nothing ever deletes it", trash)
	}
}
