package mcpclient_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
)

// The shared SSE/HTTP session of a server is every user's, and an upstream
// built on mcp-go binds each native task to the session that started it:
// these tests pin down that nothing one user's call does to that session
// fails another user's running native task.

// brokenCall calls tasksrv.ToolBroken as bob on thread t2, which the
// server answers with the JSON-RPC error -32603.
func (n *nativeBundle) brokenCall(t *testing.T) error {
	t.Helper()
	ctx := nativeCtx(t)
	srv, err := n.b.rt.Server(ctx, "tasks")
	require.NoError(t, err)
	_, err = n.b.rt.Call(ctx, srv, tasksrv.ToolBroken, "bob", "t2", nil)
	require.Error(t, err)
	require.Equal(t, mcpflow.EUpstream, mcpflow.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "the database is down")
	return err
}

func (n *nativeBundle) status(t *testing.T, ref mcpflow.TaskReference) mcpflow.Snapshot {
	t.Helper()
	snap, err := n.d.Status(nativeCtx(t), ref)
	require.NoError(t, err)
	return snap
}

// TestNativeTaskSurvivesAnotherUsersToolError: a JSON-RPC error that one
// user's ordinary tool call gets is that call's answer; it neither retires
// the shared session nor touches alice's native task bound to it.
func TestNativeTaskSurvivesAnotherUsersToolError(t *testing.T) {
	n := newNative(t)
	ref, _ := n.submit(t, tasksrv.ToolForever, nil)
	require.Equal(t, mcpflow.StatusWorking, n.status(t, ref).Status)

	n.brokenCall(t)
	n.brokenCall(t) // a second one finds the same session

	snap := n.status(t, ref)
	require.Equal(t, mcpflow.StatusWorking, snap.Status, "alice's task after bob's failed call: %s", errText(snap))
	require.Equal(t, 1, n.srv.Count("initialize"), "the shared session was dialled again after a tool's JSON-RPC error")
}

// TestNativeTaskKeepsItsSessionAcrossAConfigChange: a configuration change
// of the server gives new calls a new shared session, while the running
// native task goes on polling on the session it was started on; once it
// ended, that session closes.
func TestNativeTaskKeepsItsSessionAcrossAConfigChange(t *testing.T) {
	n := newNative(t)
	open := n.srv.AddGateTool()
	ref, _ := n.submit(t, tasksrv.ToolGate, map[string]any{"topic": "tides"})

	n.b.write(t, doc{"mcpServers": doc{"tasks": doc{"type": "http", "url": n.srv.URL, "tool_call_timeout": 20,
		"headers": doc{"X-Changed": "1"}}}})
	n.b.list(t) // the new configuration is live: new calls dial a new session
	ctx := nativeCtx(t)
	srv, err := n.b.rt.Server(ctx, "tasks")
	require.NoError(t, err)
	res, err := n.b.rt.Call(ctx, srv, tasksrv.ToolPlain, "bob", "t2", map[string]any{"word": "hi"})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, 2, n.srv.Count("initialize"), "the new configuration's calls did not get a session of their own")

	snap := n.status(t, ref)
	require.Equal(t, mcpflow.StatusWorking, snap.Status, "the task after its server's configuration changed: %s", errText(snap))
	open()
	snap = n.terminal(t, ref)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status, "%s", errText(snap))
	require.Equal(t, 2, n.srv.Count("initialize"))
}

// TestNativeTaskForgottenWithItsSession: when the server forgets the
// session a task was started on (a restart), the task's next poll cannot
// re-attach it on a new session; the task fails naming the reason, never
// as an unexplained "not found".
func TestNativeTaskForgottenWithItsSession(t *testing.T) {
	n := newNative(t)
	ref, _ := n.submit(t, tasksrv.ToolForever, nil)
	require.Equal(t, mcpflow.StatusWorking, n.status(t, ref).Status)

	n.srv.ForgetSessions()
	ctx := nativeCtx(t)
	var snap mcpflow.Snapshot
	for {
		// The first poll after the restart finds the session unknown (a
		// disconnect: retried); the next one asks on a new session.
		var err error
		snap, err = n.d.Status(ctx, ref)
		if err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "last error: %v", err)
	}
	require.Equal(t, mcpflow.StatusFailed, snap.Status)
	require.Contains(t, errText(snap), "task_not_found")
	require.Contains(t, errText(snap), "the MCP session it was started in ended")
	require.Contains(t, errText(snap), "keeps its tasks per session")
	require.Contains(t, n.b.logs.String(), "forgets its native tasks when their session ends")
}

// TestNativeTaskReattachesOnAServerWithoutSessions: a server that binds
// tasks to no session (stateless streamable HTTP) keeps answering for a
// task after its session was replaced.
func TestNativeTaskReattachesOnAServerWithoutSessions(t *testing.T) {
	srv := tasksrv.StartStateless(t)
	n := newNativeOn(t, srv)
	open := srv.AddGateTool()
	ref, _ := n.submit(t, tasksrv.ToolGate, map[string]any{"topic": "reefs"})
	n.b.write(t, doc{"mcpServers": doc{"tasks": doc{"type": "http", "url": srv.URL, "tool_call_timeout": 20,
		"headers": doc{"X-Changed": "1"}}}})
	n.b.list(t)
	open()
	snap := n.terminal(t, ref)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status, "%s", errText(snap))
}
