package main

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
)

// TestDrillWorkerKilledNativeTask kills the worker process that polls a
// native MCP task (SIGKILL, mid-task) and starts another, like
// TestWorkerKilledMidTaskRecovers: serve runs in the test process, each
// worker is a `mcpflow worker` child process, and the upstream is the Go
// task server (internal/testsupport/tasksrv, mcp-go) over streamable HTTP, which the
// second worker reaches as the first did.
//
// Where the upstream task lives decides what the user sees, so there are
// two servers, each with one task on ToolGate (it runs until the test opens
// its gate, so the kill lands mid-task by construction, not by timing):
//
//   - "shared" runs mcp-go stateless: its tasks are bound to no MCP
//     session. The new worker polls the same upstream task (tasks/get from
//     its own session) and the task completes with the upstream result.
//   - "bound" runs mcp-go's default streamable HTTP, which binds each task
//     to the session that created it (docs/mcp-servers.md, "Where tasks live"). The new
//     worker's session does not see the task (-32602), so it fails with
//     task_not_found, saying that the server keeps its tasks per session.
//
// Either way the upstream task was created once (one tools/call, keyed by
// the local task id) and never cancelled, and the thread's events are
// versions 1..n, once each.
func TestDrillWorkerKilledNativeTask(t *testing.T) {
	shared := tasksrv.StartStateless(t)
	openGate := shared.AddGateTool()
	bound := tasksrv.Start(t)
	bound.AddGateTool() // never opened: its task ends with the server
	ext := fmt.Sprintf(`{"mcpServers": {
  "shared": {"type": "http", "url": %q, "tool_call_timeout": 10},
  "bound": {"type": "http", "url": %q, "tool_call_timeout": 10}
}}`, shared.URL, bound.URL)
	cfg := writeConfig(t, drillTasksYAML, ext)
	s := startMain(t, ModeServe, cfg, nil)
	e := &taskEnv{m: s}
	first := startWorkerProc(t, cfg)

	const thread = "dnk"
	id := e.submitNative(t, thread, "shared_"+tasksrv.ToolGate, tasksrv.ToolGate, `{"topic": "survivor"}`)
	orphan := e.submitNative(t, thread, "bound_"+tasksrv.ToolGate, tasksrv.ToolGate, `{"topic": "orphan"}`)

	// The first worker polls both tasks: each server answers tasks/get.
	// (The servers' counts show the polling: they count requests where
	// they arrive.)
	for _, task := range []struct {
		id  string
		srv *tasksrv.Server
	}{{id, shared}, {orphan, bound}} {
		require.Eventually(t, func() bool { return task.srv.Count("tasks/get") > 0 },
			90*time.Second, 100*time.Millisecond, "the first worker never polled task %s", task.id)
	}

	first.kill9(t)
	for _, task := range []string{id, orphan} {
		code, d := get(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+task, testUserToken)
		require.Equal(t, 200, code, d)
		require.Equal(t, "working", d["status"], "the worker died while task %s was working: %v", task, d)
	}
	require.Zero(t, shared.Count("tasks/result"), "the upstream task had not ended (its gate is shut)")

	startWorkerProc(t, cfg)

	// Native tasks are pinned to the worker holding their session: both
	// move to the new worker once a call has waited a minute for the dead
	// one. The session-bound task is gone for the new worker's session.
	require.Eventually(t, func() bool {
		_, d := get(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+orphan, testUserToken)
		return d["status"] == "failed"
	}, 3*time.Minute, 200*time.Millisecond, "the session-bound task never moved to the new worker")
	d := e.waitStatus(t, thread, orphan, "failed")
	require.Equal(t, "Remote MCP task was not found on MCP server 'bound' (task_not_found): the MCP session it was started in ended (the server restarted, the connection was lost or the mcpflow worker restarted), and this server keeps its tasks per session, so the task cannot be re-attached: task not found",
		d["error"], "%v", d)
	require.Nil(t, d["result"])

	// The shared task is polled by the new worker while still working. Its
	// polls are counted from the moment the new worker failed the orphan:
	// the first worker had been dead for seconds by then (a request it
	// wrote just before dying is read at once), and serve never polls.
	since := shared.Count("tasks/get")
	require.Eventually(t, func() bool { return shared.Count("tasks/get") > since },
		90*time.Second, 100*time.Millisecond, "the new worker never polled the task")
	_, d = get(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
	require.Equal(t, "working", d["status"], "%v", d)
	require.Nil(t, d["last_poll_error"], "%v", d)

	openGate()
	d = e.waitStatus(t, thread, id, "completed")
	// The upstream result (its structuredContent), its pages number (above
	// 2^53) with every digit: the result crossed Temporal's JSON payloads.
	result, ok := d["result"].(map[string]any)
	require.True(t, ok, "%v", d)
	require.ElementsMatch(t, []string{"topic", "pages"}, keys(result))
	require.Equal(t, "survivor", result["topic"])
	raw := rawGet(t, s.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id)
	require.Contains(t, raw, `"pages":`+tasksrv.Pages, "the result's number arrives exactly")
	require.Nil(t, d["error"])
	require.Positive(t, shared.Count("tasks/result"))

	// One upstream task each, created by one tools/call that carried the
	// local task id as its idempotency key; recovery cancelled nothing.
	for _, task := range []struct {
		id  string
		srv *tasksrv.Server
	}{{id, shared}, {orphan, bound}} {
		require.Equal(t, 1, task.srv.Count("tools/call"), "task %s was created upstream exactly once", task.id)
		metas := task.srv.CallMetas()
		require.Len(t, metas, 1)
		require.Equal(t, task.id, metas[0][mcpflow.SubmitKeyMeta], "task %s", task.id)
		require.Zero(t, task.srv.Count("tasks/cancel"), "task %s", task.id)
		require.NotEmpty(t, remoteID(t, s, task.id))
	}
	requireEventsOnce(t, s.URL(), thread, map[string]string{id: "completed", orphan: "failed"})
}

// rawGet returns the body of an authenticated GET as the API wrote it.
func rawGet(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(b))
	return string(b)
}
