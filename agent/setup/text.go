package setup

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// WriteText writes what an install or uninstall did to the file for
// people, a line each: the entries removed and added, then how the file
// ended up (Then) and the note; or, when nothing changed, that ckpt's
// hooks were there already (or were not there).
func (f File) WriteText(w io.Writer) {
	switch {
	case len(f.Added)+len(f.Removed) > 0:
	case f.Install && f.Note != "":
		fmt.Fprintf(w, "ckpt hooks already installed in %s\n", f.Settings)
	case f.Install:
		fmt.Fprintf(w, "ckpt hooks already installed in %s; nothing changed\n", f.Settings)
	default:
		fmt.Fprintf(w, "no ckpt hooks in %s; nothing changed\n", f.Settings)
	}
	for _, r := range f.Removed {
		fmt.Fprintf(w, "removed %s\n", r)
	}
	for _, ad := range f.Added {
		fmt.Fprintf(w, "added %s\n", ad)
	}
	if f.Then != "" {
		fmt.Fprintf(w, "%s %s\n", f.Then, f.Settings)
	}
	if f.Note != "" {
		fmt.Fprintln(w, f.Note)
	}
}

// WriteText writes the report for people: the agents Install found (and
// where), what changed in each file (File.WriteText), then the
// directories Uninstall removed and the scan mode it put back.
func (r *Report) WriteText(w io.Writer) {
	if len(r.Found) > 0 {
		var parts []string
		for _, f := range r.Found {
			parts = append(parts, f.Agent+" ("+strings.Join(f.Found, ", ")+")")
		}
		fmt.Fprintf(w, "found %s\n", strings.Join(parts, ", "))
	}
	for _, f := range r.Files {
		f.WriteText(w)
	}
	for _, d := range r.RemovedDirs {
		fmt.Fprintf(w, "removed %s%c\n", d, filepath.Separator)
	}
	if r.ScanRestored != "" {
		fmt.Fprintf(w, "scan mode for %s back as before install (%s)\n", r.Workspace, map[string]string{"off": "off", "unset": "not set: off unless a session turns it on"}[r.ScanRestored])
	}
}

// WriteText writes what Check found of the hook for people: that it
// fires, with the agent's note, or that it does not, and why.
func (p Probe) WriteText(w io.Writer) {
	who := p.Agent
	if p.User {
		who += " (--user)"
	}
	if !p.Fires {
		fmt.Fprintf(w, "%s: does not fire: %s: %s\n", who, p.Command, p.Error)
		return
	}
	fmt.Fprintf(w, "%s: fires: %s\n", who, p.Command)
	if p.Note != "" {
		fmt.Fprintf(w, "%s: note: %s\n", who, p.Note)
	}
}
