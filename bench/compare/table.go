//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
)

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

func printTable(w io.Writer, start, end string, markdown bool) {
	head := fmt.Sprintf("ckpt %s, %s/%s, %d cores, %d repetitions%s; load average %s at start, %s at end",
		gitRev(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cfg.reps, map[bool]string{true: " (--quick)", false: ""}[cfg.quick], start, end)
	if markdown {
		fmt.Fprintln(w, head+". Cells are min / median / max over the repetitions; the ratio is ckpt ÷ the alternative, per repetition (for MB/s, above 1 is faster).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| figure | ckpt | alternative | ratio | target |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, r := range rows {
			if r.err != "" {
				fmt.Fprintf(w, "| %s | not measured: %s | | | %s |\n", r.name, oneLine(r.err), r.target)
				continue
			}
			alt := "—"
			if r.alt != "" {
				alt = r.alt + ": " + rng3(r.other, r.unit)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.name, rng3(r.ckpt, r.unit), alt, ratioCell(r), r.target)
		}
		return
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, "cells: min / median / max; ratio = ckpt ÷ alternative per repetition")
	for _, r := range rows {
		fmt.Fprintln(w)
		fmt.Fprintln(w, r.name)
		if r.err != "" {
			fmt.Fprintln(w, "  not measured:", oneLine(r.err))
			continue
		}
		fmt.Fprintf(w, "  ckpt         %s\n", rng3(r.ckpt, r.unit))
		if r.alt != "" {
			fmt.Fprintf(w, "  %-12s %s\n", "alternative", r.alt+": "+rng3(r.other, r.unit))
			fmt.Fprintf(w, "  %-12s %s   (target %s)\n", "ratio", strings.ReplaceAll(ratioCell(r), "*", ""), r.target)
		} else {
			fmt.Fprintf(w, "  %-12s %s\n", "target", r.target)
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

// goroot is the GOROOT of the go command on PATH (the Go source tree the
// benchmark copies), read once.
var goroot = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare: go env GOROOT:", err)
		os.Exit(1)
	}
	return strings.TrimSpace(string(out))
})
