package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// keyedCall calls tool on thread through REST with an Idempotency-Key.
func keyedCall(t *testing.T, base, thread, tool, key, args string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/api/threads/"+thread+"/tools/"+tool+"/call", strings.NewReader(`{"arguments": `+args+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// TestSubmitIdempotencyKey: a durable submit with an idempotency key (REST
// header Idempotency-Key, MCP _meta "io.mcpflow/idempotency-key" on both
// revisions) is the task mcpflow.KeyedTaskID(user, thread, key); retried,
// it answers that task and submits nothing more; the same key with other
// arguments is 409; a submit that failed answers its failure again without
// reaching the server; on another thread the key is another task.
func TestSubmitIdempotencyKey(t *testing.T) {
	demo := testenv.StartDemo(t, "http")
	tap := newUpstreamTap(t, demo.URL)
	tap.submitTool = "submit_job"
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", demoTaskExt(tap.url))
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
	base := e.m.URL()
	submits := func() int {
		tap.mu.Lock()
		defer tap.mu.Unlock()
		return tap.submits
	}
	const args = `{"duration_seconds": 300, "label": "idem"}`

	// REST.
	code, out := keyedCall(t, base, "idem", "demo_submit_job", "k-rest", args)
	require.Equal(t, 200, code, "%v", out)
	first := out["structured_content"].(map[string]any)
	id := first["task_id"].(string)
	require.Equal(t, mcpflow.KeyedTaskID("alice", "idem", "k-rest"), id)
	code, out = keyedCall(t, base, "idem", "demo_submit_job", "k-rest", args)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, id, out["structured_content"].(map[string]any)["task_id"])
	require.Equal(t, 1, submits(), "the retry submitted nothing")

	code, out = keyedCall(t, base, "idem", "demo_submit_job", "k-rest", `{"duration_seconds": 301, "label": "idem"}`)
	require.Equal(t, 409, code, "%v", out)
	require.Equal(t, "this idempotency key was already used on this thread for another request (another tool or other arguments); use a new key",
		out["error"].(map[string]any)["message"])

	code, out = keyedCall(t, base, "idem-other", "demo_submit_job", "k-rest", args)
	require.Equal(t, 200, code, "%v", out)
	require.NotEqual(t, id, out["structured_content"].(map[string]any)["task_id"], "another thread, another task")
	require.Equal(t, 2, submits())

	// MCP 2025-11-25: task-augmented, then plain, with the key in _meta.
	sid := initSession(t, base, "/mcp/threads/idem", testUserToken, nil)
	mcpID := mcpflow.KeyedTaskID("alice", "idem", "k-2025")
	for i, params := range []string{
		`{"name":"demo_submit_job","task":{},"arguments":` + args + `,"_meta":{"io.mcpflow/idempotency-key":"k-2025"}}`,
		`{"name":"demo_submit_job","task":{},"arguments":` + args + `,"_meta":{"io.mcpflow/idempotency-key":"k-2025"}}`,
		`{"name":"demo_submit_job","arguments":` + args + `,"_meta":{"io.mcpflow/idempotency-key":"k-2025"}}`,
	} {
		a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/idem", token: testUserToken, session: sid,
			body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 10+i, params)})
		require.Equal(t, 200, a.status, a.raw)
		if i < 2 {
			require.Equal(t, mcpID, a.result()["task"].(map[string]any)["taskId"], a.raw)
		} else {
			require.Equal(t, mcpID, a.result()["structuredContent"].(map[string]any)["task_id"], a.raw)
		}
	}
	require.Equal(t, 3, submits())
	a := doRPC(t, base, "POST", rpc{path: "/mcp/threads/idem", token: testUserToken, session: sid,
		body: `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"demo_submit_job","arguments":{},"_meta":{"io.mcpflow/idempotency-key":""}}}`})
	require.Equal(t, -32602.0, a.errorCode(), a.raw)

	// MCP 2026-07-28 with the Tasks extension; REST with the same key
	// answers the same task.
	c := &rpc2026{url: base + "/mcp/threads/idem", token: testUserToken, ext: true,
		extra: map[string]any{"io.mcpflow/idempotency-key": "k-2026"}}
	modernID := mcpflow.KeyedTaskID("alice", "idem", "k-2026")
	for range 2 {
		res := c.call(t, "tools/call", "demo_submit_job", map[string]any{"name": "demo_submit_job",
			"arguments": map[string]any{"duration_seconds": 300, "label": "idem"}})
		require.Equal(t, "task", res["resultType"], "%v", res)
		require.Equal(t, modernID, res["taskId"])
	}
	code, out = keyedCall(t, base, "idem", "demo_submit_job", "k-2026", args)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, modernID, out["structured_content"].(map[string]any)["task_id"])
	require.Equal(t, 4, submits())

	// A submit the server refused answers the same refusal when retried,
	// and the server sees it once.
	code, out = keyedCall(t, base, "idem", "demo_submit_job", "k-fail", `{"duration_seconds": "soon"}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, true, out["is_error"], "%v", out)
	refusal := fmt.Sprint(out["content"])
	code, out = keyedCall(t, base, "idem", "demo_submit_job", "k-fail", `{"duration_seconds": "soon"}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, true, out["is_error"], "%v", out)
	require.Equal(t, refusal, fmt.Sprint(out["content"]))
	require.Equal(t, 5, submits(), "the retry of the refused submit did not reach the server")

	// The tasks of the thread: one per key.
	code, list := get(t, base+"/api/threads/idem/mcp-tasks", testUserToken)
	require.Equal(t, 200, code)
	var ids []string
	for _, raw := range list["tasks"].([]any) {
		ids = append(ids, raw.(map[string]any)["task_id"].(string))
	}
	require.ElementsMatch(t, []string{id, mcpID, modernID}, ids)
}

// startServeProc runs `mcpflow serve --config cfg` as a child process (so
// that the test can kill it with SIGKILL) and waits until its API listens.
func startServeProc(t *testing.T, bin, cfg string) *workerProc {
	t.Helper()
	return startProc(t, bin, ModeServe, cfg)
}

// TestSubmitIdempotencyKeyReplicaKilled: two mcpflow serve processes on one
// PostgreSQL behind a round-robin proxy, and a worker. A keyed submit goes
// to the first replica, which is killed with SIGKILL while the MCP server
// holds the submit (the client gets 502); the retry with the same key goes
// to the other replica, which joins the submit in flight. One task, and the
// server received one submit.
func TestSubmitIdempotencyKeyReplicaKilled(t *testing.T) {
	pg := testenv.PostgresSchema(t, "e2e_")
	dir := t.TempDir()
	demo := testenv.StartDemo(t, "http")
	tap := newUpstreamTap(t, demo.URL)
	tap.submitTool = "submit_job"
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 120, %s}}}`, tap.url, jobToolset)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	queue := fmt.Sprintf("e2e-idem-%d", time.Now().UnixNano())
	thread := fmt.Sprintf("idem-kill-%d", time.Now().UnixNano()) // the database outlives the test
	const tasks = "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n"
	bin := testenv.Binary(t, "./cmd/mcpflow")
	cfgA, urlA := replicaConfigAt(t, dir, "serve-a", pg, queue, "alice", testUserToken, tasks)
	cfgB, urlB := replicaConfigAt(t, dir, "serve-b", pg, queue, "alice", testUserToken, tasks)
	a := startServeProc(t, bin, cfgA)
	startServeProc(t, bin, cfgB)
	w := startMain(t, ModeWorker, replicaConfig(t, dir, "worker", pg, queue, "alice", testUserToken, tasks), nil)
	require.Eventually(t, func() bool { return w.WorkerPolling() }, 30*time.Second, 50*time.Millisecond)
	proxy := newRoundRobin(t, urlA, urlB)

	const key = "retry-after-crash-1"
	id := mcpflow.KeyedTaskID("alice", thread, key)
	send := func() (int, map[string]any) {
		req, err := http.NewRequest("POST", proxy.URL+"/api/threads/"+thread+"/tools/demo_submit_job/call",
			strings.NewReader(`{"arguments": {"duration_seconds": 300, "label": "crash"}}`))
		if err != nil {
			return 0, nil
		}
		req.Header.Set("Authorization", "Bearer "+testUserToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	type answer struct {
		code int
		out  map[string]any
	}

	// The first attempt reaches replica a; the server holds its submit.
	held, release := tap.holdNextSubmit()
	first := make(chan answer, 1)
	go func() {
		code, out := send()
		first <- answer{code, out}
	}()
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		t.Fatal("the submit never reached the MCP server")
	}
	db, err := sql.Open("pgx", pg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	slotExpiry := func() (time.Time, bool) {
		var at time.Time
		err := db.QueryRow("SELECT expires_at FROM mcp_task_slots WHERE task_id = $1", id).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			return at, false
		}
		require.NoError(t, err)
		return at, true
	}
	reserved, slotted := slotExpiry()
	require.True(t, slotted, "replica a reserved the task's slot before the submit started")

	// Replica a dies with the submit in flight: the client gets 502.
	a.kill9(t)
	got := <-first
	require.Equal(t, http.StatusBadGateway, got.code, "%v", got.out)

	// The retry, with the same key, goes to replica b, which joins the
	// submit in flight (it took the task's slot again); then the server
	// answers.
	second := make(chan answer, 1)
	go func() {
		code, out := send()
		second <- answer{code, out}
	}()
	require.Eventually(t, func() bool {
		at, ok := slotExpiry()
		return ok && at.After(reserved)
	}, time.Minute, 20*time.Millisecond, "the retry never reached replica b's submit")
	close(release)
	got = <-second
	require.Equal(t, 200, got.code, "%v", got.out)
	require.Equal(t, false, got.out["is_error"], "%v", got.out)
	tap.mu.Lock()
	submits := tap.submits
	tap.mu.Unlock()
	require.Equal(t, 1, submits, "the MCP server received one submit")
	require.Equal(t, id, got.out["structured_content"].(map[string]any)["task_id"])
	code, list := get(t, urlB+"/api/threads/"+thread+"/mcp-tasks", testUserToken)
	require.Equal(t, 200, code)
	require.Len(t, list["tasks"], 1, "%v", list)
	require.Equal(t, id, list["tasks"].([]any)[0].(map[string]any)["task_id"])

	code, _ = postAs(t, urlB+"/api/threads/"+thread+"/mcp-tasks/"+id+"/cancel", testUserToken, "")
	require.Equal(t, 202, code)
}

// TestSubmitIdempotencyKeyAdopted: an ordinary call a 2026-07-28 server
// answers with a task, retried with the same key: the retry calls the tool
// again, and the task that second call started is cancelled upstream; the
// answer is the durable task of the first, which runs on.
func TestSubmitIdempotencyKeyAdopted(t *testing.T) {
	up := testenv.StartMCP2026Server(t)
	tap := newUpstreamTap(t, up)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", modernExt(tap.url, ""))
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
	id := mcpflow.KeyedTaskID("alice", "idem-adopt", "adopt-1")
	code, out := keyedCall(t, e.m.URL(), "idem-adopt", "modern_long_task", "adopt-1", `{"seconds": 600}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, id, out["structured_content"].(map[string]any)["task_id"], "%v", out)
	kept := tap.lastCreated(t)

	code, out = keyedCall(t, e.m.URL(), "idem-adopt", "modern_long_task", "adopt-1", `{"seconds": 600}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, false, out["is_error"], "%v", out)
	require.Equal(t, id, out["structured_content"].(map[string]any)["task_id"], "%v", out)
	second := tap.lastCreated(t)
	require.NotEqual(t, kept, second, "the retry called the tool again")
	tap.waitCancelled(t, up, second)
	direct := &rpc2026{url: up, ext: true}
	require.Equal(t, "working", direct.call(t, "tasks/get", kept, map[string]any{"taskId": kept})["status"], "the task of the first call runs on")
	e.waitStatus(t, "idem-adopt", id, "working")
	code, _ = e.post(t, "/api/threads/idem-adopt/mcp-tasks/"+id+"/cancel", "")
	require.Equal(t, 202, code)
	e.waitStatus(t, "idem-adopt", id, "cancelled")
}
