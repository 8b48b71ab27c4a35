package retention

import (
	"fmt"
	"io"
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

// WriteText writes the plan for people (`ckpt prune`): the sessions it
// removes and the turns it prunes on out (String), then on msgs its
// summary, a warning when the store stays over its quota and, once
// applied (rep not nil), what collecting the blobs freed.
func (p Plan) WriteText(out, msgs io.Writer, rep *GCReport) error {
	if _, err := fmt.Fprint(out, p); err != nil {
		return err
	}
	fmt.Fprintln(msgs, p.Summary(rep != nil))
	if p.OverQuota {
		fmt.Fprintln(msgs, "warning: still over the quota: pinned turns, open turns, undo records and session indexes are kept (ckpt sessions rm ID removes a session)")
	}
	if rep != nil {
		fmt.Fprintf(msgs, "collected %d blobs, %s\n", rep.Deleted, units.FormatBytes(rep.FreedBytes))
	}
	return nil
}

// WriteLost writes, a line each, what the finding's blob loses: each turn
// and path that referenced it.
func (f Finding) WriteLost(w io.Writer) {
	for _, u := range f.Uses {
		fmt.Fprintf(w, "lost: %s turn %d %s (%s, blob %s %s)\n", u.Session, u.Turn, quote.Path(u.Path), u.Kind, f.Blob.Short(), f.Kind)
	}
}

// WriteText writes the report for people (`ckpt verify`): its findings
// on out (String), then on msgs its summary and, after a repair, how many
// references it marked lost.
func (r VerifyReport) WriteText(out, msgs io.Writer) error {
	if _, err := fmt.Fprint(out, r); err != nil {
		return err
	}
	fmt.Fprintln(msgs, r.Summary())
	if r.Repaired > 0 {
		fmt.Fprintf(msgs, "repaired: %d references marked lost\n", r.Repaired)
	}
	return nil
}

// Summary says in one line what removing the session did (or, in a dry
// run, would do): its turns, and the pinned ones or what collecting its
// blobs (rep) freed.
func (r Removal) Summary(rep GCReport, dryRun bool) string {
	if dryRun {
		return fmt.Sprintf("would remove session %s: %d turns, %d pinned", r.Session, r.Turns, len(r.Pinned))
	}
	return fmt.Sprintf("removed session %s (%d turns); freed %s in %d blobs", r.Session, r.Turns, units.FormatBytes(rep.FreedBytes), rep.Deleted)
}
