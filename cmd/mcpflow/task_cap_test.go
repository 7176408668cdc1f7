package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunningTasksPerUser: one user's durable tasks that have not ended
// are capped (mcp_tasks.max_running_tasks_per_user): one more submit
// answers 429 with Retry-After on REST and on the MCP endpoint, and nothing
// is submitted; once a task ended, a submit goes through again.
func TestRunningTasksPerUser(t *testing.T) {
	url := demoHTTP(t)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, max_running_tasks_per_user: 2 }\n", demoTaskExt(url))
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}

	long := `{"duration_seconds": 120}`
	first := e.submit(t, "cap1", "demo_submit_job", long)
	e.submit(t, "cap2", "demo_submit_job", long)

	req, err := http.NewRequest("POST", e.m.URL()+"/api/threads/cap3/tools/demo_submit_job/call", strings.NewReader(`{"arguments": `+long+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v", out)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.Equal(t, map[string]any{"code": "too_many_requests",
		"message": "this user already has 2 running durable tasks, the most one user may (mcp_tasks.max_running_tasks_per_user); wait for one to finish or cancel one"}, out["error"])

	// The MCP endpoint answers the same cap with HTTP 429.
	sid := initSession(t, e.m.URL(), "/mcp/threads/cap4", testUserToken, nil)
	a := doRPC(t, e.m.URL(), "POST", rpc{path: "/mcp/threads/cap4", token: testUserToken, session: sid,
		body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo_submit_job","arguments":` + long + `}}`})
	require.Equal(t, http.StatusTooManyRequests, a.status, a.raw)
	require.Equal(t, "5", a.header.Get("Retry-After"))
	require.Contains(t, a.raw, "mcp_tasks.max_running_tasks_per_user")

	code, tasks := get(t, e.m.URL()+"/api/threads/cap3/mcp-tasks", testUserToken)
	require.Equal(t, 200, code)
	require.Empty(t, tasks["tasks"], "the refused submit started no task")

	code, _ = e.post(t, "/api/threads/cap1/mcp-tasks/"+first+"/cancel", "")
	require.Equal(t, 202, code)
	e.waitStatus(t, "cap1", first, "cancelled")
	e.submit(t, "cap3", "demo_submit_job", long)
}
