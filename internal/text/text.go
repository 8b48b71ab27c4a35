// Package text words things for people, the same way in every front-end
// that talks to them: errors on one line, counts of things.
package text

import (
	"fmt"
	"strings"
)

// pkgPrefixes are the package names library errors start their layers
// with; useful in logs, noise on a terminal.
var pkgPrefixes = strings.NewReplacer("controller: ", "", "checkpoints: ", "", "capture: ", "", "cas: ", "", "migrations: ", "")

// ErrorLine flattens an error (errors.Join uses newlines) to one line for
// people, without the package prefixes of each layer.
func ErrorLine(err error) string {
	return pkgPrefixes.Replace(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
}

// Plural is n and the noun, with an s when n is not 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
