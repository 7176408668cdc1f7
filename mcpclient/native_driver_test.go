package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/route"
	"github.com/mcpflow/mcpflow/mcpclient/taskdriver"
)

// nativeBundle drives a real mcp-go task server (internal/testsupport/tasksrv) through
// a runtime with the native driver behind the Drivers router, as the
// worker does.
type nativeBundle struct {
	srv *tasksrv.Server
	b   *rtBundle
	d   mcpflow.Driver
}

func newNative(t *testing.T) *nativeBundle {
	t.Helper()
	return newNativeOn(t, tasksrv.Start(t))
}

// newNativeOn is newNative with the task server srv.
func newNativeOn(t *testing.T, srv *tasksrv.Server) *nativeBundle {
	t.Helper()
	b := newRuntime(t, doc{"mcpServers": doc{"tasks": doc{"type": "http", "url": srv.URL, "tool_call_timeout": 20}}})
	native := &taskdriver.Native{Run: func(ctx context.Context, server, userID, threadID string, op route.Op) error {
		s, err := b.rt.Server(ctx, server)
		if err != nil {
			return err
		}
		return b.rt.Run(ctx, s, userID, threadID, op)
	}}
	return &nativeBundle{srv: srv, b: b, d: &taskdriver.Drivers{Native: native}}
}

func nativeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), generous)
	t.Cleanup(cancel)
	return ctx
}

// submit starts tool as a native task and returns its reference.
func (n *nativeBundle) submit(t *testing.T, tool string, args map[string]any) (mcpflow.TaskReference, mcpflow.Submission) {
	t.Helper()
	local := mcpflow.NewTaskID()
	data := map[string]string{mcpflow.DriverDataNativeTool: tool}
	sub, err := n.d.Submit(nativeCtx(t), mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "tasks",
		TaskName: tool, Arguments: args, DriverData: data, LocalTaskID: local})
	require.NoError(t, err)
	require.NoError(t, sub.Validate())
	require.Equal(t, data, sub.DriverData)
	return mcpflow.TaskReference{LocalTaskID: local, UserID: "alice", ThreadID: "t1", ServerName: "tasks",
		RemoteTaskID: sub.RemoteTaskID, DriverData: sub.DriverData}, sub
}

// terminal polls the task until it is terminal (the workflow would wait
// between polls; the test polls as fast as it likes).
func (n *nativeBundle) terminal(t *testing.T, ref mcpflow.TaskReference) mcpflow.Snapshot {
	t.Helper()
	ctx := nativeCtx(t)
	for {
		snap, err := n.d.Status(ctx, ref)
		require.NoError(t, err)
		if snap.Status.IsTerminal() {
			return snap
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task still %s: %v", snap.Status, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func errText(s mcpflow.Snapshot) string {
	if s.Error == nil {
		return ""
	}
	return *s.Error
}

// TestNativeDriverOutcomes runs each outcome of a native task: submit
// (task-augmented tools/call with the idempotency key), tasks/get while it
// runs, tasks/result once it is terminal.
func TestNativeDriverOutcomes(t *testing.T) {
	t.Parallel()
	n := newNative(t)

	t.Run("completed with structured content", func(t *testing.T) {
		ref, sub := n.submit(t, tasksrv.ToolReport, map[string]any{"topic": "tides", "delay_ms": 300})
		require.Equal(t, mcpflow.StatusWorking, sub.Snapshot.Status)
		require.Regexp(t, `^[0-9a-f-]{36}$`, sub.RemoteTaskID, "the remote id is the upstream taskId")
		metas := n.srv.CallMetas()
		require.Equal(t, ref.LocalTaskID, metas[len(metas)-1][mcpflow.SubmitKeyMeta], "the idempotency key rides in _meta")
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status)
		require.Equal(t, map[string]any{"topic": "tides", "pages": json.Number(tasksrv.Pages)}, snap.Result,
			"structuredContent, numbers exact")
		require.Nil(t, snap.Error)
		require.Nil(t, snap.PollAfterSeconds)
		_, err := snap.Normalize(mcpflow.DefaultBounds())
		require.NoError(t, err)
	})
	t.Run("completed with content only", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolReport, map[string]any{"topic": "waves", "text_only": true, "delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status)
		require.Equal(t, []any{map[string]any{"type": "text", "text": "Report on waves"}}, snap.Result, "the content blocks")
	})
	t.Run("optional task support", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolMaybe, map[string]any{"word": "hi"})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status)
		require.Equal(t, []any{map[string]any{"type": "text", "text": "maybe: hi"}}, snap.Result)
	})
	t.Run("failed", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolExplode, map[string]any{"delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusFailed, snap.Status)
		require.Equal(t, "the reactor melted", errText(snap), "the JSON-RPC error of tasks/result")
		require.Nil(t, snap.Result)
	})
	t.Run("isError is failed", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolRefuse, map[string]any{"delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusFailed, snap.Status, "mcp-go stores an isError result as completed")
		require.Equal(t, "quota exceeded", errText(snap))
	})
	t.Run("input_required", func(t *testing.T) {
		// mcp-go's server never asks for input: the answer is edited.
		ref, _ := n.submit(t, tasksrv.ToolForever, nil)
		n.srv.Rewrite("tasks/get", func(r map[string]any) { r["status"], r["statusMessage"] = "input_required", "Which tide?" })
		defer n.srv.Rewrite("tasks/get", nil)
		snap, err := n.d.Status(nativeCtx(t), ref)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusInputRequired, snap.Status)
		require.Equal(t, map[string]any{"message": "Which tide?"}, snap.InputRequired)
		require.Nil(t, snap.Message, "the question is not a progress message")
	})
	t.Run("working with a statusMessage", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolForever, nil)
		n.srv.Rewrite("tasks/get", func(r map[string]any) { r["statusMessage"] = "3 of 7 pages" })
		defer n.srv.Rewrite("tasks/get", nil)
		snap, err := n.d.Status(nativeCtx(t), ref)
		require.NoError(t, err)
		require.Equal(t, mcpflow.StatusWorking, snap.Status)
		require.Equal(t, "3 of 7 pages", *snap.Message)
	})
	require.Positive(t, n.srv.Count("tasks/result"))
}

// TestNativeDriverContentBlocks: a completed native task keeps the
// upstream's own content blocks (an image and texts, annotations and all)
// beside its result, and says whether the result is the upstream's
// structuredContent or, when it had none, those blocks.
func TestNativeDriverContentBlocks(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	blocks := []any{
		map[string]any{"type": "image", "data": tasksrv.ChartPNG, "mimeType": "image/png"},
		map[string]any{"type": "text", "text": "Chart of tides"},
		map[string]any{"type": "text", "text": tasksrv.ChartNote,
			"annotations": map[string]any{"audience": []any{"user"}, "priority": json.Number("0.5")}},
	}
	decode := func(t *testing.T, raw json.RawMessage) any {
		t.Helper()
		var v any
		require.NoError(t, mcpflow.DecodeExact(raw, &v), "%s", raw)
		return v
	}

	t.Run("with structuredContent", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolChart, map[string]any{"title": "tides", "delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status, errText(snap))
		require.Equal(t, map[string]any{"title": "tides", "points": json.Number(tasksrv.Pages)}, snap.Result,
			"the result is the structuredContent, as before")
		require.True(t, snap.ResultStructured)
		require.Equal(t, blocks, decode(t, snap.Content), "the blocks, all three")
		out, err := snap.Normalize(mcpflow.DefaultBounds())
		require.NoError(t, err)
		require.Equal(t, blocks, decode(t, out.Content), "bounded, still there")
		require.True(t, out.ResultStructured)
	})
	t.Run("without structuredContent", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolChart, map[string]any{"title": "tides", "blocks_only": true, "delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusCompleted, snap.Status, errText(snap))
		require.Equal(t, blocks, snap.Result, "the result is the blocks, as before")
		require.False(t, snap.ResultStructured, "the upstream had no structuredContent")
		require.Equal(t, blocks, decode(t, snap.Content))
	})
	t.Run("a failed task keeps none", func(t *testing.T) {
		ref, _ := n.submit(t, tasksrv.ToolRefuse, map[string]any{"delay_ms": 10})
		snap := n.terminal(t, ref)
		require.Equal(t, mcpflow.StatusFailed, snap.Status)
		require.Nil(t, snap.Content)
		require.False(t, snap.ResultStructured)
	})
}

// TestNativeDriverCancel pins tasks/cancel: a running task ends
// cancelled; cancelling a terminal task (-32602) reports its actual
// terminal status through tasks/get.
func TestNativeDriverCancel(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	ctx := nativeCtx(t)

	ref, _ := n.submit(t, tasksrv.ToolForever, nil)
	snap, err := n.d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, snap.Status)
	snap, err = n.d.Cancel(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)
	require.Equal(t, 1, n.srv.Count("tasks/cancel"))
	snap, err = n.d.Status(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCancelled, snap.Status, "the cancel sticks")

	gets := n.srv.Count("tasks/get")
	snap, err = n.d.Cancel(ctx, ref)
	require.NoError(t, err, "cancel is idempotent")
	require.Equal(t, mcpflow.StatusCancelled, snap.Status)
	require.Equal(t, gets+1, n.srv.Count("tasks/get"), "a refused cancel is followed by tasks/get")

	done, _ := n.submit(t, tasksrv.ToolReport, map[string]any{"topic": "done", "delay_ms": 10})
	n.terminal(t, done)
	snap, err = n.d.Cancel(ctx, done)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status, "the actual terminal status")
	require.Equal(t, map[string]any{"topic": "done", "pages": json.Number(tasksrv.Pages)}, snap.Result)
}

// TestNativeDriverTaskGone pins that an upstream task the server does not
// know (an unknown id, an expired ttl) is failed, from status and cancel.
func TestNativeDriverTaskGone(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	ctx := nativeCtx(t)

	unknown := mcpflow.TaskReference{LocalTaskID: mcpflow.NewTaskID(), UserID: "alice", ThreadID: "t1", ServerName: "tasks",
		RemoteTaskID: "no-such-task", DriverData: map[string]string{mcpflow.DriverDataNativeTool: tasksrv.ToolForever}}
	for name, op := range map[string]func(context.Context, mcpflow.TaskReference) (mcpflow.Snapshot, error){
		"status": n.d.Status, "cancel": n.d.Cancel,
	} {
		snap, err := op(ctx, unknown)
		require.NoError(t, err, name)
		require.Equal(t, mcpflow.StatusFailed, snap.Status, name)
		require.Contains(t, errText(snap), "Remote MCP task was not found on MCP server 'tasks' (task_not_found)", name)
		require.Contains(t, errText(snap), "task not found", "%s: the server's words follow", name)
	}

	n.srv.SetTTL(300 * time.Millisecond)
	ref, _ := n.submit(t, tasksrv.ToolForever, nil)
	n.srv.SetTTL(0)
	snap := n.terminal(t, ref)
	require.Equal(t, mcpflow.StatusFailed, snap.Status, "the ttl expired while the task was working")
	require.Contains(t, errText(snap), "task_not_found")
	require.Contains(t, errText(snap), "task has expired")
}

// TestNativeDriverMalformed pins that broken answers are protocol errors
// (the task fails) and transport failures are not (polls retry).
func TestNativeDriverMalformed(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	ctx := nativeCtx(t)
	ref, _ := n.submit(t, tasksrv.ToolForever, nil)

	for name, edit := range map[string]func(map[string]any){
		"no taskId":       func(r map[string]any) { delete(r, "taskId") },
		"unknown status":  func(r map[string]any) { r["status"] = "paused" },
		"another task":    func(r map[string]any) { r["taskId"] = "someone-else" },
		"status a number": func(r map[string]any) { r["status"] = 7 },
	} {
		n.srv.Rewrite("tasks/get", edit)
		_, err := n.d.Status(ctx, ref)
		require.Error(t, err, name)
		require.True(t, mcpflow.IsProtocolError(err), "%s: %v", name, err)
	}
	n.srv.Rewrite("tasks/get", nil)

	n.srv.Rewrite("tools/call", func(r map[string]any) { delete(r, "task") })
	_, err := n.d.Submit(ctx, mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "tasks", TaskName: "x",
		DriverData: map[string]string{mcpflow.DriverDataNativeTool: tasksrv.ToolForever}})
	require.True(t, mcpflow.IsProtocolError(err), "a tools/call answered without a task: %v", err)
	require.ErrorContains(t, err, "without a task")
	n.srv.Rewrite("tools/call", nil)

	// A submit without its tool is a protocol error of its own.
	_, err = n.d.Submit(ctx, mcpflow.SubmitRequest{ServerName: "tasks", DriverData: map[string]string{mcpflow.DriverDataNativeTool: " "}})
	require.True(t, mcpflow.IsProtocolError(err), "%v", err)

	// An unknown tool: the server refuses the call, which is no protocol
	// error (nothing was started). A tool without task support is run
	// plainly by mcp-go (the spec says it SHOULD refuse): no task came
	// back, which is one.
	submitTool := func(tool string) error {
		_, err := n.d.Submit(ctx, mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "tasks", TaskName: tool,
			DriverData: map[string]string{mcpflow.DriverDataNativeTool: tool}})
		return err
	}
	err = submitTool("nope")
	require.ErrorContains(t, err, "MCP tool 'nope' on server 'tasks' refused the task-augmented call: tool 'nope' not found")
	require.False(t, mcpflow.IsProtocolError(err))
	err = submitTool(tasksrv.ToolPlain)
	require.True(t, mcpflow.IsProtocolError(err), "%v", err)

	// The server goes away: a plain, retryable error.
	n.srv.Close()
	_, err = n.d.Status(ctx, ref)
	require.Error(t, err)
	require.False(t, mcpflow.IsProtocolError(err), "%v", err)
}

// TestNativeDriverPollInterval pins that the server's pollInterval is the
// poll hint, used by the workflow's timing like any driver's hint.
func TestNativeDriverPollInterval(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	n.srv.SetPollInterval(2500 * time.Millisecond)
	ref, sub := n.submit(t, tasksrv.ToolForever, nil)
	require.Equal(t, 2.5, *sub.Snapshot.PollAfterSeconds)
	snap, err := n.d.Status(nativeCtx(t), ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, snap.Status)
	require.Equal(t, 2.5, *snap.PollAfterSeconds)
	timing := mcpflow.PollTiming{PollInterval: 5 * time.Second, InputRequiredInterval: 30 * time.Second, MaxPollBackoff: time.Hour}
	delay, ok := timing.NextPollDelay(snap)
	require.True(t, ok)
	require.Equal(t, 2500*time.Millisecond, delay)

	n.srv.SetPollInterval(0)
	snap, err = n.d.Status(nativeCtx(t), ref)
	require.NoError(t, err)
	require.Nil(t, snap.PollAfterSeconds, "no pollInterval, no hint: poll_interval_seconds applies")
}

// TestNativeDriverBeforeSend pins that the submit runs mcpflow.BeforeSend
// right before it leaves, and that nothing is sent when it fails.
func TestNativeDriverBeforeSend(t *testing.T) {
	t.Parallel()
	n := newNative(t)
	req := mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "tasks", TaskName: "f",
		DriverData: map[string]string{mcpflow.DriverDataNativeTool: tasksrv.ToolForever}}
	refused := errors.New("cannot record the sent marker")
	_, err := n.d.Submit(mcpflow.WithBeforeSend(nativeCtx(t), func(context.Context) error { return refused }), req)
	require.ErrorIs(t, err, refused)
	require.Zero(t, n.srv.Count("tools/call"), "nothing was sent")

	marks := 0
	sub, err := n.d.Submit(mcpflow.WithBeforeSend(nativeCtx(t), func(context.Context) error { marks++; return nil }), req)
	require.NoError(t, err)
	require.NotEmpty(t, sub.RemoteTaskID)
	require.Equal(t, 1, marks)
	require.Equal(t, 1, n.srv.Count("tools/call"))
}

// TestNativeDriverReferenceServer drives server-everything's native task
// tool over stdio: the pooled session of the task's thread stays pinned
// while the task runs, the server's pollInterval (1 s) is the hint, and
// the report comes back as the result's content blocks.
func TestNativeDriverReferenceServer(t *testing.T) {
	t.Parallel()
	entry := testenv.EverythingEntry(t)
	b := newRuntime(t, doc{"mcpServers": doc{"ever": doc{"type": "stdio", "command": "node", "args": []string{entry, "stdio"}}}})
	n := &nativeBundle{b: b, d: &taskdriver.Native{Run: func(ctx context.Context, server, userID, threadID string, op route.Op) error {
		s, err := b.rt.Server(ctx, server)
		if err != nil {
			return err
		}
		return b.rt.Run(ctx, s, userID, threadID, op)
	}}}
	ctx := nativeCtx(t)
	data := map[string]string{mcpflow.DriverDataNativeTool: "simulate-research-query"}
	sub, err := n.d.Submit(ctx, mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "ever",
		TaskName: "research", Arguments: map[string]any{"topic": "tides"}, DriverData: data, LocalTaskID: mcpflow.NewTaskID()})
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, sub.Snapshot.Status)
	require.Equal(t, 1.0, *sub.Snapshot.PollAfterSeconds)
	require.Equal(t, 1, b.rt.Pool().Stats().Pinned, "the session holding the task is pinned")

	ref := mcpflow.TaskReference{UserID: "alice", ThreadID: "t1", ServerName: "ever", RemoteTaskID: sub.RemoteTaskID, DriverData: data}
	snap := n.terminal(t, ref)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)
	blocks, ok := snap.Result.([]any)
	require.True(t, ok, "%v", snap.Result)
	require.Contains(t, blocks[0].(map[string]any)["text"], "# Research Report: tides")
	require.Zero(t, b.rt.Pool().Stats().Pinned, "a terminal task unpins its session")

	// Cancelling the finished task reports it completed.
	snap, err = n.d.Cancel(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusCompleted, snap.Status)
}

// TestNativeDriverStdioTranslation pins that a native task's result from
// a stdio server running in the thread's workspace has its paths
// translated like an ordinary tool result: absolute paths, and a bare
// name of a file the task wrote.
func TestNativeDriverStdioTranslation(t *testing.T) {
	t.Parallel()
	bin := testenv.Binary(t, "./internal/testsupport/tasksrv/cmd/tasksrv")
	b := newRuntime(t, doc{"mcpServers": doc{"local": doc{"type": "stdio", "command": bin}}})
	n := &nativeBundle{b: b, d: &taskdriver.Native{Run: func(ctx context.Context, server, userID, threadID string, op route.Op) error {
		s, err := b.rt.Server(ctx, server)
		if err != nil {
			return err
		}
		return b.rt.Run(ctx, s, userID, threadID, op)
	}}}
	data := map[string]string{mcpflow.DriverDataNativeTool: tasksrv.ToolWrite}
	sub, err := n.d.Submit(nativeCtx(t), mcpflow.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "local", TaskName: "write",
		Arguments: map[string]any{"name": "out/report.md", "content": "# hi", "delay_ms": 50}, DriverData: data})
	require.NoError(t, err)
	snap := n.terminal(t, mcpflow.TaskReference{UserID: "alice", ThreadID: "t1", ServerName: "local", RemoteTaskID: sub.RemoteTaskID, DriverData: data})
	require.Equal(t, mcpflow.StatusCompleted, snap.Status, "%v", errText(snap))
	require.Equal(t, []any{
		map[string]any{"type": "text", "text": "Wrote /mnt/user-data/workspace/out/report.md"},
		map[string]any{"type": "text", "text": "see /mnt/user-data/workspace/out/report.md"},
	}, snap.Result)
	require.JSONEq(t, `[{"type":"text","text":"Wrote /mnt/user-data/workspace/out/report.md"},{"type":"text","text":"see /mnt/user-data/workspace/out/report.md"}]`,
		string(snap.Content), "the blocks are translated too")
	require.False(t, snap.ResultStructured)
	got, err := os.ReadFile(filepath.Join(b.threadWorkspace("alice", "t1"), "out", "report.md"))
	require.NoError(t, err)
	require.Equal(t, "# hi", string(got))
}
