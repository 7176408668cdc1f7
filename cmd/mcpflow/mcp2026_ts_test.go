package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestMCP2026TSClient: the official TypeScript SDK v2 client (2.4.0) with
// the Tasks extension (ext-tasks 0.2.2), an implementation independent of
// mcpflow, drives durable tasks through mcpflow's MCP endpoint over
// 2026-07-28: discover, a task to its result, a task whose question it
// answers with tasks/update, and a cancel.
func TestMCP2026TSClient(t *testing.T) {
	testenv.Node2026(t)
	e := startInputEnv(t)
	url := e.m.URL() + "/mcp/threads/ts-2026"

	steps := testenv.RunMCP2026Client(t, url, testUserToken, "discover")
	connect := testenv.Step(steps, "connect")
	require.NotNil(t, connect, "%v", steps)
	require.Contains(t, fmt.Sprint(connect), "2026-07-28", "%v", connect)
	disc := testenv.Step(steps, "discover")
	require.Contains(t, fmt.Sprint(disc), "io.modelcontextprotocol/tasks", "%v", disc)

	steps = testenv.RunMCP2026Client(t, url, testUserToken, "task", `{"tool": "demo_submit_job", "arguments": {"duration_seconds": 1}}`)
	require.Equal(t, "task", testenv.Step(steps, "call")["kind"], "%v", steps)
	outcome := testenv.Step(steps, "outcome")
	require.Equal(t, "completed", outcome["status"], "%v", steps)

	steps = testenv.RunMCP2026Client(t, url, testUserToken, "question",
		`{"tool": "demo_submit_job", "arguments": {"duration_seconds": 0.5, "outcome": "ask", "answer_duration_seconds": 0.5}, "answer": {"format": "pdf"}}`)
	require.NotNil(t, testenv.Step(steps, "input_request"), "%v", steps)
	outcome = testenv.Step(steps, "outcome")
	require.Equal(t, "completed", outcome["status"], "%v", steps)
	require.Contains(t, fmt.Sprint(outcome["result"]), "pdf", "the server used the answer: %v", outcome)

	steps = testenv.RunMCP2026Client(t, url, testUserToken, "cancel", `{"tool": "demo_submit_job", "arguments": {"duration_seconds": 300}}`)
	require.Equal(t, "cancelled", testenv.Step(steps, "final")["status"], "%v", steps)
}

// TestMCP2026Upstream: a 2026-07-28-only upstream (the TypeScript SDK v2
// server with the Tasks extension) behind mcpflow: mcpflow discovers it and
// speaks 2026-07-28 to it; its ordinary tool answers; a task it answers a
// plain tools/call with becomes a durable mcpflow task (REST and MCP),
// whose question is answered through mcpflow, one that fails fails, one
// that is cancelled is cancelled upstream; the tools keep their own fields.
func TestMCP2026Upstream(t *testing.T) {
	up := testenv.StartMCP2026Server(t)
	ext := fmt.Sprintf(`{"mcpServers": {"modern": {"type": "http", "url": %q, "tool_call_timeout": 30}}}`, up)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1, input_required_poll_interval_seconds: 5 }\n", ext)
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}

	// The tools with their own fields.
	code, body := get(t, e.m.URL()+"/api/threads/up26/tools", testUserToken)
	require.Equal(t, 200, code, "%v", body)
	byName := map[string]map[string]any{}
	for _, raw := range body["tools"].([]any) {
		tl := raw.(map[string]any)
		byName[tl["name"].(string)] = tl
	}
	echo := byName["modern_echo"]
	require.NotNil(t, echo, "%v", body)
	require.NotEmpty(t, echo["title"], "%v", echo)
	require.NotNil(t, echo["annotations"], "%v", echo)
	require.Contains(t, echo["input_schema"], "$schema", "%v", echo)

	// An ordinary call.
	code, out := e.post(t, "/api/threads/up26/tools/modern_echo/call", `{"arguments": {"text": "hi"}}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, false, out["is_error"], "%v", out)
	require.Contains(t, fmt.Sprint(out["content"]), "hi")

	// A plain call the server answers with a task: a durable task.
	code, out = e.post(t, "/api/threads/up26/tools/modern_sleep_task/call", `{"arguments": {"ms": 500}}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, false, out["is_error"], "%v", out)
	id := out["structured_content"].(map[string]any)["task_id"].(string)
	d := e.waitStatus(t, "up26", id, "completed")
	require.NotNil(t, d["result"], "%v", d)

	// A task that asks: answered through the REST input route, delivered
	// upstream with tasks/update.
	code, out = e.post(t, "/api/threads/up26/tools/modern_ask_question/call", `{"arguments": {}}`)
	require.Equal(t, 200, code, "%v", out)
	qid := out["structured_content"].(map[string]any)["task_id"].(string)
	d = e.waitQuestion(t, "up26", qid)
	require.Equal(t, true, d["input_answerable"], "%v", d)
	q := d["input_required"].(map[string]any)
	content := map[string]any{}
	if props, ok := q["requested_schema"].(map[string]any)["properties"].(map[string]any); ok {
		for k := range props {
			content[k] = "blue"
		}
	}
	b := fmt.Sprintf(`{"action": "accept", "content": %s}`, mustJSON(t, content))
	code, out = e.post(t, "/api/threads/up26/mcp-tasks/"+qid+"/input", b)
	require.Equal(t, 202, code, "%v", out)
	d = e.waitStatus(t, "up26", qid, "completed")
	require.Contains(t, fmt.Sprint(d["result"]), "blue", "the server got the answer: %v", d)

	// A task that fails.
	code, out = e.post(t, "/api/threads/up26/tools/modern_fail_task/call", `{"arguments": {}}`)
	require.Equal(t, 200, code, "%v", out)
	fid := out["structured_content"].(map[string]any)["task_id"].(string)
	d = e.waitStatus(t, "up26", fid, "failed")
	require.NotEmpty(t, d["error"], "%v", d)

	// A task that is cancelled.
	code, out = e.post(t, "/api/threads/up26/tools/modern_long_task/call", `{"arguments": {}}`)
	require.Equal(t, 200, code, "%v", out)
	lid := out["structured_content"].(map[string]any)["task_id"].(string)
	e.waitStatus(t, "up26", lid, "working")
	code, out = e.post(t, "/api/threads/up26/mcp-tasks/"+lid+"/cancel", "")
	require.Equal(t, 202, code, "%v", out)
	e.waitStatus(t, "up26", lid, "cancelled")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestMCP2026Example runs the example of docs/agent-developers.md,
// examples/mcp-2026/durable-task.mjs (the TypeScript SDK v2 client with
// ext-tasks), against mcpflow as it is written: the call answers a task,
// the task's question is answered with tasks/update, and the task
// completes with the answer used.
func TestMCP2026Example(t *testing.T) {
	node := testenv.Node2026(t)
	e := startInputEnv(t)
	// The example resolves its packages next to itself: a copy beside the
	// test dependencies that make testdeps installed.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "mcp-2026", "durable-task.mjs"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "durable-task.mjs"), src, 0o644))
	require.NoError(t, os.Symlink(filepath.Join(testenv.NPMDir(), "node_modules"), filepath.Join(dir, "node_modules")))
	// As the guide runs it: MCPFLOW_URL (what make dev prints for other
	// ports), no thread named. Each run takes a thread of its own, so one
	// after the first run's thread was deleted works as well.
	run := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "durable-task.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "MCPFLOW_URL="+e.m.URL()+"/", "MCP_TOKEN="+testUserToken)
		b, err := cmd.CombinedOutput()
		out := string(b)
		require.NoError(t, err, "%s", out)
		t.Logf("%s", out)
		require.Regexp(t, `call answered: task mcp-task-[0-9a-f]{32}`, out)
		require.Contains(t, out, "question: ")
		require.Contains(t, out, "status: input_required")
		require.Regexp(t, `outcome: completed .*pdf`, out)
		m := regexp.MustCompile(`endpoint: \S+/mcp/threads/(example-2026-\S+)`).FindStringSubmatch(out)
		require.NotNil(t, m, "the example names its endpoint")
		return m[1]
	}
	first := run()
	code, _, out := send(t, http.MethodDelete, e.m.URL()+"/api/threads/"+first, testUserToken, "")
	require.Equal(t, http.StatusNoContent, code, out)
	require.NotEqual(t, first, run())
}

// TestMCP2026UpstreamStdio: the 2026-07-28-only TypeScript SDK v2 server
// over stdio behind mcpflow: mcpflow probes it with server/discover on the
// child's stdin, speaks 2026-07-28 to it, relays an ordinary call and its
// progress, and a task it answers a plain call with is a durable task.
func TestMCP2026UpstreamStdio(t *testing.T) {
	node := testenv.Node2026(t)
	script := filepath.Join(testenv.NPMDir(), "mcp2026_server.mjs")
	ext := fmt.Sprintf(`{"mcpServers": {"modern": {"type": "stdio", "command": %q, "args": [%q, "--stdio"], "tool_call_timeout": 30}}}`, node, script)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\nworkspace: { root: ws }\n", ext)
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}

	code, out := e.post(t, "/api/threads/st26/tools/modern_echo/call", `{"arguments": {"text": "over stdio"}}`)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, false, out["is_error"], "%v", out)
	require.Contains(t, fmt.Sprint(out["content"]), "over stdio")

	c, progress, _ := legacyClient(t, e.m.URL()+"/mcp/threads/st26", nil)
	res := callWithProgress(t, c, "modern_progress", "p-stdio", map[string]any{"steps": 2, "delayMs": 10})
	require.Contains(t, resultText(res), "done after 2 steps")
	require.Len(t, progress.of("p-stdio"), 2, "the stdio server's progress reached the client")

	code, out = e.post(t, "/api/threads/st26/tools/modern_sleep_task/call", `{"arguments": {"ms": 300}}`)
	require.Equal(t, 200, code, "%v", out)
	id := out["structured_content"].(map[string]any)["task_id"].(string)
	d := e.waitStatus(t, "st26", id, "completed")
	require.Contains(t, fmt.Sprint(d["result"]), "300", "%v", d)
}
