package capture

import "strings"

// configPaths are the workspace paths of agent and ckpt configuration: the
// hook settings and files `ckpt install` writes for each agent, and the
// agents' own project settings beside them. ckpt protects them as it does
// a VCS directory: a scan never records them, a capture refuses them and a
// rewind never changes them, so rewinding an agent's work never takes its
// hooks (or ckpt's) away or puts back ones since removed. A path ending in
// "/" is a whole directory. Case is ignored, as for VCS names. cmd/ckpt's
// tests hold every file an install writes in a project to this table.
var configPaths = []string{
	".claude/settings.json",
	".claude/settings.local.json",
	".claude/commands/ckpt-rewind.md",
	".gemini/settings.json",
	".qwen/settings.json",
	".codex/hooks.json",
	".cursor/hooks.json",
	".github/hooks/ckpt.json",
	".clinerules/hooks/",
	".windsurf/hooks.json",
	".opencode/plugin/ckpt.js",
	".kilo/plugin/ckpt.js",
	".amp/plugins/ckpt.ts",
	".pi/extensions/",
}

// ErrConfig is wrapped when the path is agent or ckpt configuration (see
// configPaths). It is also ErrVCSDir: whatever leaves a VCS path alone
// leaves it alone.
var ErrConfig error = configError{}

type configError struct{}

func (configError) Error() string {
	return "path is agent or ckpt configuration, which ckpt never records or rewinds"
}

func (configError) Is(target error) bool { return target == ErrVCSDir }

// IsConfig reports whether the canonical workspace-relative rel is agent
// or ckpt configuration, or a directory holding only that (.clinerules/hooks).
func IsConfig(rel string) bool {
	if rel == "" || rel[0] != '.' {
		return false // every entry starts with a dot
	}
	for _, p := range configPaths {
		if dir, ok := strings.CutSuffix(p, "/"); ok {
			if strings.EqualFold(rel, dir) || len(rel) > len(p) && strings.EqualFold(rel[:len(p)], p) {
				return true
			}
		} else if strings.EqualFold(rel, p) {
			return true
		}
	}
	return false
}

// protect returns the error for a path ckpt never reads or writes: one
// through a VCS directory (ErrVCSDir), or agent or ckpt configuration
// (ErrConfig). It is nil for any other path.
func protect(rel string) error {
	if _, ok := vcsElem(rel); ok {
		return ErrVCSDir
	}
	if IsConfig(rel) {
		return ErrConfig
	}
	return nil
}
