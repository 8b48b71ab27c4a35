package retention

import (
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/units"
)

// String lists, one line each, the sessions the plan removes and the
// turns it prunes, with the reason: what `ckpt prune` prints.
func (p Plan) String() string {
	var b strings.Builder
	for _, s := range p.Sessions {
		if s.Action == "remove" {
			fmt.Fprintf(&b, "remove session %s: %s\n", s.Session, s.Reason)
		}
	}
	for _, d := range p.Turns {
		if d.Action == "prune" {
			fmt.Fprintf(&b, "prune  %s turn %d: %s\n", d.Session, d.Turn, d.Reason)
		}
	}
	return b.String()
}

// Summary says in one line how many turns the plan prunes (applied: has
// pruned), what the store holds and what the plan frees of it.
func (p Plan) Summary(applied bool) string {
	pruned := 0
	for _, d := range p.Turns {
		if d.Action == "prune" {
			pruned++
		}
	}
	verb := "would prune"
	if applied {
		verb = "pruned"
	}
	return fmt.Sprintf("%s %d turns; the store holds %s, %s of it freed by this", verb, pruned, units.FormatBytes(p.StoreBytes), units.FormatBytes(p.FreedBytes))
}

// String is the finding in one line: its kind, the blob, and each place
// that references it.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %s", f.Kind, f.Blob)
	for _, u := range f.Uses {
		fmt.Fprintf(&b, "  %s turn %d %s", u.Session, u.Turn, quote.Path(u.Path))
	}
	return b.String()
}

// String lists the findings and the sessions whose catalog summary was
// rewritten, one line each.
func (r VerifyReport) String() string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString(f.String() + "\n")
	}
	for _, id := range r.Catalog {
		fmt.Fprintf(&b, "%-8s %s  its summary in the store's catalog disagreed with its index (rewritten)\n", "catalog", id)
	}
	return b.String()
}

// Summary says in one line how much was checked and how much found.
func (r VerifyReport) Summary() string {
	return fmt.Sprintf("checked %d referenced blobs of %d stored: %d findings", r.Checked, r.Blobs, len(r.Findings)+len(r.Catalog))
}
