package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what a bug report needs to name the build.
type versionInfo struct {
	Version  string `json:"version"`            // the module version, or "(devel)" for a build from a checkout
	Revision string `json:"revision,omitempty"` // the VCS commit the binary was built from
	Time     string `json:"time,omitempty"`     // that commit's time
	Modified bool   `json:"modified"`           // the checkout had uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads the version from the binary's build info.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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

// String is the one-line form --version prints.
func (v versionInfo) String() string {
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

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "version",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintln(a.stdout, "ckpt "+v.String())
			return nil
		},
	}
}
