package hook

import (
	"context"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
)

// MCPSession is the session an MCP server records into when an agent
// that exports its session id (agent.EnvSessioner: Claude Code) started
// it: that id, which the agent's hooks use as the ckpt session (ok false
// when no such agent did, or its id is not a valid session id). While the
// store has no such session yet, workspace is the agent's project
// directory when dir is inside it, as the hooks take it; else "". dir is
// the current directory, or "" when the workspace is settled already.
func MCPSession(ctx context.Context, store, dir string, getenv func(string) string) (session, workspace string, ok bool, err error) {
	for _, a := range agent.All() {
		es, isEnv := a.(agent.EnvSessioner)
		if !isEnv {
			continue
		}
		id := es.EnvSession(getenv)
		if id == "" || !controller.ValidSession(id) {
			continue
		}
		if dir == "" {
			return id, "", true, nil
		}
		st := controller.OpenStore(store)
		loc, err := st.Resolve(ctx, controller.ResolveOptions{Session: id, Create: true})
		st.Close()
		if err != nil || loc.OfSession {
			return id, "", true, err
		}
		if proj := es.ProjectDir(getenv); proj != "" && es.Workspace(dir, proj) == proj {
			workspace = proj
		}
		return id, workspace, true, nil
	}
	return "", "", false, nil
}
