package mcpclient_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/taskdriver"
)

// TestPinnedSessionsPerUser: one user's running durable tasks on a stdio
// server hold at most MaxPinnedPerUser sessions pinned; the submit of one
// more is refused (ETooMany) before it reaches a server, while a task in a
// thread whose session the user pins already, another user's task, and a
// task after one ended are not.
func TestPinnedSessionsPerUser(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t, "./internal/testsupport/tasksrv/cmd/tasksrv")
	b := newRuntime(t, doc{"mcpServers": doc{"local": doc{"type": "stdio", "command": bin}}},
		func(o *mcpclient.Options) { o.MaxPinnedPerUser = 2 })
	n := &nativeBundle{b: b, d: &taskdriver.Native{Run: func(ctx context.Context, server, userID, threadID string, op route.Op) error {
		s, err := b.rt.Server(ctx, server)
		if err != nil {
			return err
		}
		return b.rt.Run(ctx, s, userID, threadID, op)
	}}}
	data := map[string]string{mcpflow.DriverDataNativeTool: tasksrv.ToolForever}
	submit := func(user, thread string) (mcpflow.TaskReference, error) {
		sub, err := n.d.Submit(nativeCtx(t), mcpflow.SubmitRequest{UserID: user, ThreadID: thread, ServerName: "local",
			TaskName: "forever", DriverData: data, LocalTaskID: mcpflow.NewTaskID()})
		return mcpflow.TaskReference{UserID: user, ThreadID: thread, ServerName: "local", RemoteTaskID: sub.RemoteTaskID, DriverData: data}, err
	}

	_, err := submit("alice", "t1")
	require.NoError(t, err)
	t2, err := submit("alice", "t2")
	require.NoError(t, err)

	_, err = submit("alice", "t3")
	require.Error(t, err)
	require.Equal(t, mcpflow.ETooMany, mcpflow.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "already hold 2 stdio sessions, the most one user may (mcp_tasks.max_pinned_sessions_per_user)")

	_, err = submit("alice", "t1")
	require.NoError(t, err, "a thread whose session alice pins already costs nothing more")
	_, err = submit("bob", "t1")
	require.NoError(t, err, "the cap is per user")

	snap, err := n.d.Cancel(nativeCtx(t), t2)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)
	_, err = submit("alice", "t3")
	require.NoError(t, err, "a task that ended freed its session")
}
