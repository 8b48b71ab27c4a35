package remote

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckpt/ckpt/internal/units"
)

// String is the configuration for people, one setting a line: the URL
// and where it was set, and for S3 the endpoint, region and key id (the
// secret only as set or not).
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote:   %s\nfrom:     %s\n", c.URL, c.Source)
	if !strings.HasPrefix(c.URL, "s3:") {
		return b.String()
	}
	show := func(v, unset string) string {
		if v == "" {
			return unset
		}
		return v
	}
	secret := "(AWS_SECRET_ACCESS_KEY not set)"
	if c.SecretSet {
		secret = "set"
	}
	fmt.Fprintf(&b, "endpoint: %s\nregion:   %s\nkey id:   %s\nsecret:   %s\n",
		show(c.Endpoint, "(AWS)"), show(c.Region, "(us-east-1)"), show(c.AccessKey, "(AWS_ACCESS_KEY_ID not set)"), secret)
	return b.String()
}

// Summary says what the collection did (or, in a dry run, would do): the
// packs it repacked, on a line of their own when there were any, then the
// objects it deleted and kept.
func (g GCReport) Summary() string {
	verb, rverb := "deleted", "repacked"
	if g.DryRun {
		verb, rverb = "would delete", "would repack"
	}
	s := fmt.Sprintf("%s %d objects (%s); %d live, %d unreferenced kept for now; %d stale uploads aborted",
		verb, len(g.Deleted), units.FormatBytes(g.DeletedBytes), g.Live, g.Candidates, g.AbortedUploads)
	if rp := g.Repack; len(rp.Packs) > 0 {
		s = fmt.Sprintf("%s %d packs (%s unreferenced, %s live kept in %d new packs); %d sessions' HEADs rewritten, %d changed meanwhile and left alone\n",
			rverb, len(rp.Packs), units.FormatBytes(rp.DeadBytes), units.FormatBytes(rp.LiveBytes), len(rp.NewPacks), rp.Sessions, len(rp.Skipped)) + s
	}
	return s
}

// String is the finding in one line.
func (f Finding) String() string {
	return fmt.Sprintf("%-8s %s %s: %s", f.Kind, f.Session, f.Key, f.Detail)
}

// Summary says in one line how much was checked and how much found.
func (v VerifyReport) Summary() string {
	return fmt.Sprintf("checked %d remote sessions, %d packs, %d blobs: %d findings", v.Sessions, v.Packs, v.Blobs, len(v.Findings))
}

// String is what the pull did, in three lines: what it fetched, the
// workspace, and the session with the remote one it came from.
func (p PullResult) String() string {
	return fmt.Sprintf("pulled %s: %d turns, %d blobs fetched (%s)\nworkspace: %s\nsession:   %s (from %s)\n",
		p.Session, p.Turns, p.Blobs, units.FormatBytes(p.Bytes), p.Workspace, p.Session, p.RemoteSession)
}

// headLine lays out one line of a table of HEADs.
const headLine = "%-36s %6v %10s  %-20s  %-12s %s\n"

// HeadTable is a table of the sessions whose HEADs are hs, for people: a
// header line, then one line each.
func HeadTable(hs []Head) string {
	var b strings.Builder
	fmt.Fprintf(&b, headLine, "SESSION", "TURNS", "INDEX", "UPDATED", "HOST", "WORKSPACE")
	for _, h := range hs {
		fmt.Fprintf(&b, headLine, h.Session, h.Turns, units.FormatBytes(h.IndexSize), h.Updated, h.Host, h.Workspace)
	}
	return b.String()
}

// WriteText writes the collection for people (`ckpt remote gc`): the keys
// of the objects it deleted (or would delete) on out, a line each, and its
// Summary on msgs.
func (g GCReport) WriteText(out, msgs io.Writer) {
	for _, k := range g.Deleted {
		fmt.Fprintln(out, k)
	}
	fmt.Fprintln(msgs, g.Summary())
}

// WriteText writes the report for people (`ckpt verify --remote`): its
// findings on out, a line each, and its Summary on msgs.
func (v VerifyReport) WriteText(out, msgs io.Writer) {
	for _, f := range v.Findings {
		fmt.Fprintln(out, f)
	}
	fmt.Fprintln(msgs, v.Summary())
}
