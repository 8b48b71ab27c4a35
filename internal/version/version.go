// Package version names the running ckpt build: what `ckpt version`
// prints, what the MCP server and the hook server report, and what a bug
// report needs.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is what a bug report needs to name the build.
type Info struct {
	Version  string `json:"version"`            // the module version, or "(devel)" for a build from a checkout
	Revision string `json:"revision,omitempty"` // the VCS commit the binary was built from
	Time     string `json:"time,omitempty"`     // that commit's time
	Modified bool   `json:"modified"`           // the checkout had uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// Read reads the version from the binary's build info.
func Read() Info {
	v := Info{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line form `ckpt --version` prints: the version, the
// commit's first 12 hex digits and whether it was modified, the Go
// version and the platform.
func (v Info) String() string {
	s := v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (" + rev
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s, %s, %s", s, v.Go, v.Platform)
}
