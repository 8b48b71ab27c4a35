// Package msg is how ckpt words an error or a scan's skips for people, in
// one line: the CLI's messages and the hook's (agent/hook) alike.
package msg

import (
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/quote"
)

// pkgPrefixes are the package names library errors start their layers
// with; useful in logs, noise on a terminal.
var pkgPrefixes = strings.NewReplacer("controller: ", "", "checkpoints: ", "", "capture: ", "", "cas: ", "", "migrations: ", "")

// OneLine flattens an error (errors.Join uses newlines) to one line for
// people, without the package prefixes of each layer.
func OneLine(err error) string {
	return pkgPrefixes.Replace(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
}

// SkipNote says what the scan of the turn res opened skipped, or "" when
// it skipped nothing (or did not run).
func SkipNote(res controller.TurnResult) string {
	if res.Scan == nil || len(res.Scan.Manifest.Skips) == 0 {
		return ""
	}
	skips := res.Scan.Manifest.Skips
	const show = 5
	parts := make([]string, 0, show)
	for i, sk := range skips {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more (`ckpt --json turn` lists them)", len(skips)-show))
			break
		}
		parts = append(parts, quote.Path(sk.Path)+" ("+sk.Reason+")")
	}
	return fmt.Sprintf("the scan skipped %d entries, which a rewind leaves alone: %s", len(skips), strings.Join(parts, "; "))
}
