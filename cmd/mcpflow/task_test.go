package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"
)

// demoHTTP runs the demo MCP server over streamable HTTP with a state file
// and returns its /mcp URL.
func demoHTTP(t *testing.T) string {
	t.Helper()
	return testenv.StartDemo(t, "http", "--state", filepath.Join(t.TempDir(), "jobs.json")).URL
}

type taskEnv struct {
	m *Main
}

func startTaskEnv(t *testing.T) *taskEnv {
	t.Helper()
	url := demoHTTP(t)
	bin := testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp")
	toolset := `"task_toolsets": [{"name": "job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job"}]`
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "local": {"type": "stdio", "command": %q, "args": ["--transport", "stdio"], %s}
}}`, url, toolset, bin, toolset)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 5 }\nworkspace: { root: ws }\n", ext)
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
}

// waitReady waits until m answers /readyz and its worker runs.
func waitReady(t *testing.T, m *Main) *Main {
	t.Helper()
	require.Eventually(t, func() bool {
		code, _ := get(t, m.URL()+"/readyz", "")
		return code == 200
	}, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool { return m.WorkerPolling() }, 30*time.Second, 50*time.Millisecond)
	return m
}

func (e *taskEnv) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	return do(t, "POST", e.m.URL()+path, testUserToken, body)
}

// do sends a request with token and a JSON body (none when "") and returns
// the status and the JSON answer.
func do(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, out
}

func (e *taskEnv) submit(t *testing.T, thread, tool, args string) string {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/"+tool+"/call", `{"arguments": `+args+`, "secrets": {"tenant_token": "s3cr3t-tenant-value"}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	sc := out["structured_content"].(map[string]any)
	require.ElementsMatch(t, []string{"task_id", "task_name", "status", "message"}, keys(sc))
	require.Equal(t, "job", sc["task_name"])
	require.Equal(t, "Task is running in the background.", sc["message"])
	return sc["task_id"].(string)
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	return k
}

func (e *taskEnv) waitStatus(t *testing.T, thread, id, status string) map[string]any {
	t.Helper()
	return e.waitDetail(t, thread, id, "status", status)
}

// waitDetail waits until the task detail's field has the value want and
// returns the detail.
func (e *taskEnv) waitDetail(t *testing.T, thread, id, field string, want any) map[string]any {
	t.Helper()
	var last map[string]any
	require.Eventually(t, func() bool {
		_, last = get(t, e.m.URL()+"/api/threads/"+thread+"/mcp-tasks/"+id, testUserToken)
		return last[field] == want
	}, 90*time.Second, 100*time.Millisecond, "task's %s never became %s: %v", field, want, last)
	return last
}

func TestDurableTasksEndToEnd(t *testing.T) {
	e := startTaskEnv(t)

	// The listing shows the submit wrapper and hides status and cancel.
	code, body := get(t, e.m.URL()+"/api/threads/t1/tools", testUserToken)
	require.Equal(t, 200, code)
	names := map[string]map[string]any{}
	for _, raw := range body["tools"].([]any) {
		tool := raw.(map[string]any)
		names[tool["name"].(string)] = tool
	}
	require.Contains(t, names, "demo_submit_job")
	require.Equal(t, "job", names["demo_submit_job"]["task_toolset"])
	require.Contains(t, names["demo_submit_job"]["description"], "Submitted as durable background task 'job'")
	require.NotContains(t, names, "demo_get_job_status")
	require.NotContains(t, names, "demo_cancel_job")

	t.Run("completed over http", func(t *testing.T) {
		id := e.submit(t, "t1", "demo_submit_job", `{"duration_seconds": 1, "outcome": "completed", "label": "visible-marker-7"}`)
		d := e.waitStatus(t, "t1", id, "completed")
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"])
		require.NotContains(t, d, "remote_task_id")
		require.NotContains(t, d, "server_name")
		require.NotContains(t, d, "driver_data")
		// The secret given on submit never reached Temporal history, while
		// the submit arguments did (so the check does see payloads).
		h := historyBytes(t, id)
		require.True(t, bytes.Contains(h, []byte("visible-marker-7")))
		require.False(t, bytes.Contains(h, []byte("s3cr3t-tenant-value")))
	})
	t.Run("failed", func(t *testing.T) {
		id := e.submit(t, "t1", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "failed", "error": "disk full"}`)
		d := e.waitStatus(t, "t1", id, "failed")
		require.Equal(t, "disk full", d["error"])
	})
	t.Run("input_required", func(t *testing.T) {
		id := e.submit(t, "t1", "demo_submit_job", `{"duration_seconds": 0.5, "outcome": "input_required"}`)
		d := e.waitStatus(t, "t1", id, "input_required")
		require.Equal(t, "Which format?", d["input_required"].(map[string]any)["question"])
	})
	t.Run("cancel through the API", func(t *testing.T) {
		id := e.submit(t, "t2", "demo_submit_job", `{"duration_seconds": 300}`)
		code, d := e.post(t, "/api/threads/t2/mcp-tasks/"+id+"/cancel", "")
		require.Equal(t, 202, code, d)
		require.Equal(t, true, d["cancel_requested"])
		d = e.waitStatus(t, "t2", id, "cancelled")
		require.Equal(t, true, d["cancel_requested"])
		code, _ = e.post(t, "/api/threads/t2/mcp-tasks/"+id+"/cancel", "")
		require.Equal(t, 409, code, "cancelling a finished task")
	})
	t.Run("cancel with a Temporal signal", func(t *testing.T) {
		id := e.submit(t, "t2", "demo_submit_job", `{"duration_seconds": 300}`)
		e.waitStatus(t, "t2", id, "working")
		require.NoError(t, temporal.Client().SignalWorkflow(context.Background(), id, "", "cancel", nil))
		e.waitStatus(t, "t2", id, "cancelled")
	})
	t.Run("stdio task pinned to its worker", func(t *testing.T) {
		id := e.submit(t, "t3", "local_submit_job", `{"duration_seconds": 1}`)
		d := e.waitStatus(t, "t3", id, "completed")
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"])
		id = e.submit(t, "t3", "local_submit_job", `{"duration_seconds": 0.5, "outcome": "failed", "error": "stdio disk full"}`)
		require.Equal(t, "stdio disk full", e.waitStatus(t, "t3", id, "failed")["error"])
		id = e.submit(t, "t3", "local_submit_job", `{"duration_seconds": 0.5, "outcome": "input_required"}`)
		d = e.waitStatus(t, "t3", id, "input_required")
		require.Equal(t, "Which format?", d["input_required"].(map[string]any)["question"])
		id = e.submit(t, "t3", "local_submit_job", `{"duration_seconds": 300}`)
		e.waitStatus(t, "t3", id, "working")
		code, out := e.post(t, "/api/threads/t3/mcp-tasks/"+id+"/cancel", "")
		require.Equal(t, 202, code, out)
		e.waitStatus(t, "t3", id, "cancelled")
		id = e.submit(t, "t3", "local_submit_job", `{"duration_seconds": 300}`)
		e.waitStatus(t, "t3", id, "working")
		require.NoError(t, temporal.Client().SignalWorkflow(context.Background(), id, "", "cancel", nil))
		e.waitStatus(t, "t3", id, "cancelled")
	})
	t.Run("built-in background task tools", func(t *testing.T) {
		require.Contains(t, names, "list_background_tasks")
		require.Contains(t, names, "cancel_background_task")
		id := e.submit(t, "t4", "demo_submit_job", `{"duration_seconds": 300}`)
		code, out := e.post(t, "/api/threads/t4/tools/list_background_tasks/call", `{"arguments": {"active_only": true}}`)
		require.Equal(t, 200, code, out)
		tasks := out["structured_content"].(map[string]any)["tasks"].([]any)
		require.Len(t, tasks, 1)
		require.Equal(t, id, tasks[0].(map[string]any)["task_id"])
		code, out = e.post(t, "/api/threads/t4/tools/cancel_background_task/call", `{"arguments": {"task": "nothing-like-it"}}`)
		require.Equal(t, 200, code)
		require.Equal(t, "No active background task matches this request", out["structured_content"].(map[string]any)["message"])
		code, out = e.post(t, "/api/threads/t4/tools/cancel_background_task/call", `{"arguments": {"task": " JOB "}}`)
		require.Equal(t, 200, code)
		sc := out["structured_content"].(map[string]any)
		require.Equal(t, false, sc["cancelled"], "cancellation is asynchronous")
		require.Contains(t, sc["message"], "Cancellation requested.")
		e.waitStatus(t, "t4", id, "cancelled")
	})
	t.Run("caller gone during submit cancels the task", func(t *testing.T) {
		// The agent gives up (its HTTP client times out) while the remote
		// submit is still running: nobody learns the task id, so the task
		// that the workflow does persist is cancelled remotely.
		hc := &http.Client{Timeout: 500 * time.Millisecond}
		req, err := http.NewRequest("POST", e.m.URL()+"/api/threads/t5/tools/demo_submit_job/call",
			strings.NewReader(`{"arguments": {"duration_seconds": 300, "submit_delay_seconds": 3}}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		_, err = hc.Do(req)
		require.Error(t, err, "the caller timed out")
		var tasks []any
		require.Eventually(t, func() bool {
			_, body := get(t, e.m.URL()+"/api/threads/t5/mcp-tasks", testUserToken)
			tasks, _ = body["tasks"].([]any)
			return len(tasks) == 1 && tasks[0].(map[string]any)["status"] == "cancelled"
		}, 60*time.Second, 200*time.Millisecond, "tasks: %v", tasks)
		require.Equal(t, true, tasks[0].(map[string]any)["cancel_requested"])
	})
	t.Run("list and search attributes", func(t *testing.T) {
		code, body := get(t, e.m.URL()+"/api/threads/t1/mcp-tasks", testUserToken)
		require.Equal(t, 200, code)
		require.Len(t, body["tasks"], 3)
		code, body = get(t, e.m.URL()+"/api/threads/t3/mcp-tasks?active_only=true", testUserToken)
		require.Equal(t, 200, code)
		require.Len(t, body["tasks"], 1, "only the input_required task is still active")
		resp, err := temporal.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: `McpTaskStatus="completed" AND McpThreadId="t1"`})
		require.NoError(t, err)
		require.Len(t, resp.GetExecutions(), 1)
		// another user's view is 404
		code, _ = get(t, e.m.URL()+"/api/threads/t1/mcp-tasks", testAdminToken)
		require.Equal(t, 403, code)
	})
}

// historyBytes returns the whole workflow history in its protobuf wire
// form, where payloads appear as the raw bytes they hold.
func historyBytes(t *testing.T, id string) []byte {
	t.Helper()
	it := temporal.Client().GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var buf bytes.Buffer
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		b, err := proto.Marshal(ev)
		require.NoError(t, err)
		buf.Write(b)
	}
	require.NotZero(t, buf.Len())
	return buf.Bytes()
}
