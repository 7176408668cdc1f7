package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
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

// replicaConfig is the config.yaml of one process of a multi-replica test:
// PostgreSQL pg, task queue queue, the one user user (token), and extra.
func replicaConfig(t *testing.T, dir, name, pg, queue, user, token, extra string) string {
	t.Helper()
	path, _ := replicaConfigAt(t, dir, name, pg, queue, user, token, extra)
	return path
}

// replicaConfigAt is replicaConfig that also returns the API's URL.
func replicaConfigAt(t *testing.T, dir, name, pg, queue, user, token, extra string) (string, string) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	body := fmt.Sprintf(`server: { addr: %q, worker_addr: %q, shutdown_timeout_seconds: 2, max_concurrent_calls_per_user: 100 }
database: { backend: postgres, dsn: %q }
temporal: { address: %q, namespace: default, task_queue: %s }
workspace: { root: ws }
auth:
  admin_tokens: [%q]
  users: [ { id: %s, token: %q } ]
%s`, addr, testenv.FreeAddr(t), pg, temporal.HostPort, queue, testAdminToken, user, token, extra)
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path, "http://" + addr
}

// TestRunningTasksPerUserReplicas: the cap on a user's running durable
// tasks holds database-wide. 50 submits at once through two mcpflow serve
// replicas on one PostgreSQL (round robin) under
// max_running_tasks_per_user: 2: exactly two tasks run, the other 48 are
// refused with 429, and the MCP server received exactly two submits.
func TestRunningTasksPerUserReplicas(t *testing.T) {
	pg := testenv.PostgresSchema(t, "e2e_")
	dir := t.TempDir()
	state := filepath.Join(dir, "jobs.json")
	demo := testenv.StartDemo(t, "http", "--state", state)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(demoTaskExt(demo.URL)), 0o600))
	queue := fmt.Sprintf("e2e-cap-%d", time.Now().UnixNano())
	user := fmt.Sprintf("cap-%d", time.Now().UnixNano()) // the database outlives the test
	const token = "cap-user-token"
	tasks := "mcp_tasks: { enabled: true, poll_interval_seconds: 1, max_running_tasks_per_user: 2 }\n"
	a := startMain(t, ModeServe, replicaConfig(t, dir, "serve-a", pg, queue, user, token, tasks), nil)
	b := startMain(t, ModeServe, replicaConfig(t, dir, "serve-b", pg, queue, user, token, tasks), nil)
	w := startMain(t, ModeWorker, replicaConfig(t, dir, "worker", pg, queue, user, token, tasks), nil)
	require.Eventually(t, func() bool { return w.WorkerPolling() }, 30*time.Second, 50*time.Millisecond)
	proxy := newRoundRobin(t, a.URL(), b.URL())

	const n = 50
	thread := user // thread ids are global, and the database outlives the test
	code, body := postAs(t, proxy.URL+"/api/threads", token, `{"thread_id": "`+thread+`"}`)
	require.Equal(t, 201, code, "%v", body)
	codes := make([]int, n)
	bodies := make([]map[string]any, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], bodies[i] = postAs(t, proxy.URL+"/api/threads/"+thread+"/tools/demo_submit_job/call", token,
				`{"arguments": {"duration_seconds": 120}}`)
		}()
	}
	close(start)
	wg.Wait()

	var ok, refused int
	for i, code := range codes {
		switch code {
		case 200:
			require.Equal(t, false, bodies[i]["is_error"], "%v", bodies[i])
			ok++
		case 429:
			require.Contains(t, fmt.Sprint(bodies[i]["error"]), "mcp_tasks.max_running_tasks_per_user")
			refused++
		default:
			t.Fatalf("submit %d answered %d: %v", i, code, bodies[i])
		}
	}
	require.Equal(t, 2, ok, "exactly the cap runs")
	require.Equal(t, n-2, refused)
	require.Equal(t, 2, readDrillState(t, state).Submits, "nothing was submitted for the refused calls")
	code, list := get(t, proxy.URL+"/api/threads/"+thread+"/mcp-tasks", token)
	require.Equal(t, 200, code)
	require.Len(t, list["tasks"], 2)
	for _, raw := range list["tasks"].([]any) {
		id := raw.(map[string]any)["task_id"].(string)
		code, _ := postAs(t, proxy.URL+"/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", token, "")
		require.Equal(t, 202, code)
	}
}

// postAs posts body with token's bearer and decodes the JSON answer;
// without require, so that it runs on any goroutine (an error is status 0).
func postAs(t *testing.T, url, token, body string) (int, map[string]any) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
