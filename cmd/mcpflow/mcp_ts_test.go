package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// The MCP endpoint driven by the official TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by `make testdeps`) through
// internal/testdata/npm/mcp_client.mjs: one scenario per node run, one
// JSON line of what the client observed.

const (
	// tsBobToken is the second user's token in the TypeScript SDK tests.
	tsBobToken = "e2e-ts-bob-token"
	// tsSecret is the request-scoped secret sent in a tools/call's _meta.
	tsSecret = "ts-meta-s3cr3t-value-4711"
	// tsTaskID is the shape of a local task id.
	tsTaskID = `^mcp-task-[0-9a-f]{32}$`
)

// tsClientScript returns the path of mcp_client.mjs, skipping t when node
// or the SDK is not installed (testenv.MissingDependency).
func tsClientScript(t *testing.T) string {
	t.Helper()
	npm := filepath.Join(testenv.RepoRoot(), "internal", "testdata", "npm")
	sdk := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(sdk); err != nil {
		testenv.MissingDependency(t, "the TypeScript MCP SDK is not installed at %s: run `make testdeps` (needs npm)", sdk)
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.MissingDependency(t, "node not found on PATH: install Node.js and run `make testdeps` to test the MCP endpoint with the TypeScript SDK client")
	}
	return filepath.Join(npm, "mcp_client.mjs")
}

// tsInput is a scenario's MCP_INPUT.
type tsInput struct {
	Tool      string            `json:"tool,omitempty"`
	Arguments map[string]any    `json:"arguments,omitempty"`
	Meta      map[string]any    `json:"meta,omitempty"` // the tools/call's _meta
	TaskID    string            `json:"taskId,omitempty"`
	SessionID string            `json:"sessionId,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Answer    map[string]any    `json:"answer,omitempty"` // the elicitation result to answer with
}

// runTS runs one scenario of mcp_client.mjs against url as the user with
// token ("" for none) and decodes the JSON line it prints into T.
func runTS[T any](t *testing.T, scenario, url, token string, in tsInput) T {
	t.Helper()
	script := tsClientScript(t)
	b, err := json.Marshal(in)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, scenario)
	cmd.Env = append(os.Environ(), "MCP_URL="+url, "MCP_TOKEN="+token, "MCP_INPUT="+string(b))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node mcp_client.mjs %s: %s%s", scenario, stdout.String(), stderr.String())
	var out T
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "node mcp_client.mjs %s printed %q", scenario, stdout.String())
	return out
}

// tsError is an error as the script reports it: an McpError's JSON-RPC
// code, or a StreamableHTTPError's HTTP status.
type tsError struct {
	Name    string `json:"name"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// tsTask is an MCP Task as the SDK parsed it.
type tsTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	PollInterval  *int   `json:"pollInterval"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

type tsContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// tsToolResult is a CallToolResult as the SDK parsed it.
type tsToolResult struct {
	Content           []tsContent    `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	Meta              map[string]any `json:"_meta"`
}

// tsAttempt is one SDK call's outcome: a result or an error.
type tsAttempt[T any] struct {
	Result    *T       `json:"result"`
	Error     *tsError `json:"error"`
	SessionID string   `json:"sessionId"`
	Sent      []string `json:"sent"`
}

// requireTaskNotFound checks an error is the -32602 of a task that does
// not exist for the caller.
func requireTaskNotFound(t *testing.T, e *tsError, id, what string) {
	t.Helper()
	require.NotNil(t, e, "%s answered instead of failing", what)
	require.Equal(t, "McpError", e.Name, what)
	require.Equal(t, -32602, e.Code, what)
	require.Equal(t, "MCP error -32602: Task not found: "+id, e.Message, what)
}

// tsEnv is mcpflow dev with two users (alice with testUserToken, bob with
// tsBobToken) and two demo servers over HTTP: "demo" with its job toolset,
// and "sec" whose calls need the request-scoped secret tenant_token as the
// header X-Tenant-Token.
type tsEnv struct {
	*taskEnv
	cfg  string
	logs *testenv.SyncBuffer
}

func startTSEnv(t *testing.T) *tsEnv {
	t.Helper()
	dir := t.TempDir()
	sec := testenv.StartDemo(t, "http")
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 30, %s},
  "sec": {"type": "http", "url": %q, "tool_call_timeout": 30, "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}}}
}}`, demoHTTP(t), jobToolset, sec.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	cfg := fmt.Sprintf(`server: { addr: %q, worker_addr: %q, shutdown_timeout_seconds: 2 }
database: { backend: sqlite, dsn: mcpflow.db }
temporal: { address: %q, namespace: default, task_queue: e2e-ts-%d }
mcp_tasks: { enabled: true, poll_interval_seconds: 1 }
workspace: { root: ws }
auth:
  admin_tokens: [%q]
  users: [ { id: alice, token: %q }, { id: bob, token: %q } ]
`, testenv.FreeAddr(t), testenv.FreeAddr(t), temporal.HostPort, time.Now().UnixNano(), testAdminToken, testUserToken, tsBobToken)
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	e := &tsEnv{cfg: path, logs: &testenv.SyncBuffer{}}
	e.taskEnv = e.start(t)
	return e
}

// start runs mcpflow dev on the env's config and waits until it is ready
// and its worker runs.
func (e *tsEnv) start(t *testing.T) *taskEnv {
	t.Helper()
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, e.cfg, e.logs))}
}

func (e *tsEnv) thread(id string) string { return e.m.URL() + "/mcp/threads/" + id }

// createTask makes a task-augmented call of demo_submit_job on thread and
// returns the created task.
func (e *tsEnv) createTask(t *testing.T, thread string, args map[string]any) tsTask {
	t.Helper()
	out := runTS[tsAttempt[tsTask]](t, "create_task", e.thread(thread), testUserToken,
		tsInput{Tool: "demo_submit_job", Arguments: args})
	require.Nil(t, out.Error, "%+v", out.Error)
	require.Regexp(t, tsTaskID, out.Result.TaskID)
	require.Equal(t, "working", out.Result.Status)
	return *out.Result
}

// The MCP endpoint as the TypeScript SDK client sees it: negotiation, the
// tool listing, plain and task-augmented calls, cancel, failures, task
// isolation between threads and users, request-scoped secrets and HTTP
// auth.
func TestMCPEndpointTypeScriptSDK(t *testing.T) {
	tsClientScript(t)
	e := startTSEnv(t)

	t.Run("initialize", func(t *testing.T) {
		out := runTS[struct {
			SessionID       string         `json:"sessionId"`
			ProtocolVersion string         `json:"protocolVersion"`
			ServerInfo      map[string]any `json:"serverInfo"`
			Capabilities    map[string]any `json:"capabilities"`
		}](t, "initialize", e.thread("ts-init"), testUserToken, tsInput{})
		require.Equal(t, "2025-11-25", out.ProtocolVersion)
		require.Equal(t, "mcpflow", out.ServerInfo["name"])
		require.Regexp(t, `^mcp-session-[0-9a-f]{32}$`, out.SessionID)
		require.Equal(t, map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}, out.Capabilities["tasks"])
		require.Contains(t, out.Capabilities, "tools")
	})

	t.Run("tools/list", func(t *testing.T) {
		out := runTS[struct {
			Tools []struct {
				Name      string         `json:"name"`
				Execution map[string]any `json:"execution"`
			} `json:"tools"`
		}](t, "list_tools", e.thread("ts-list"), testUserToken, tsInput{})
		byName := map[string]map[string]any{}
		for _, tool := range out.Tools {
			byName[tool.Name] = tool.Execution
		}
		require.Contains(t, byName, "demo_submit_job")
		require.Equal(t, map[string]any{"taskSupport": "optional"}, byName["demo_submit_job"])
		require.Contains(t, byName, "demo_add")
		require.Nil(t, byName["demo_add"], "an ordinary tool has no execution")
		require.Contains(t, byName, "sec_headers")
		require.NotContains(t, byName, "demo_get_job_status", "status tools are hidden")
		require.NotContains(t, byName, "demo_cancel_job", "cancel tools are hidden")
	})

	t.Run("plain calls", func(t *testing.T) {
		add := runTS[tsAttempt[tsToolResult]](t, "call", e.thread("ts-plain"), testUserToken,
			tsInput{Tool: "demo_add", Arguments: map[string]any{"a": 2, "b": 3}})
		require.Nil(t, add.Error)
		require.False(t, add.Result.IsError)
		require.Equal(t, []tsContent{{Type: "text", Text: "5"}}, add.Result.Content)
		require.Equal(t, map[string]any{"sum": 5.0}, add.Result.StructuredContent)

		// A submit wrapper without task: the REST answer, its handle in
		// structuredContent.
		sub := runTS[tsAttempt[tsToolResult]](t, "call", e.thread("ts-plain"), testUserToken,
			tsInput{Tool: "demo_submit_job", Arguments: map[string]any{"duration_seconds": 1}})
		require.Nil(t, sub.Error)
		require.False(t, sub.Result.IsError)
		sc := sub.Result.StructuredContent
		require.ElementsMatch(t, []string{"task_id", "task_name", "status", "message"}, keys(sc))
		require.Regexp(t, tsTaskID, sc["task_id"])
		require.Equal(t, "job", sc["task_name"])
		require.Contains(t, []any{"submitted", "working"}, sc["status"])
		require.Equal(t, "Task is running in the background.", sc["message"])
		// It is a durable task like any other.
		e.waitStatus(t, "ts-plain", sc["task_id"].(string), "completed")

		unknown := runTS[tsAttempt[tsToolResult]](t, "call", e.thread("ts-plain"), testUserToken, tsInput{Tool: "no_such_tool"})
		require.NotNil(t, unknown.Error)
		require.Equal(t, -32602, unknown.Error.Code)
	})

	// The completed task of the stream, cancelled again below.
	var completed string
	t.Run("task-augmented call with callToolStream", func(t *testing.T) {
		type message struct {
			Type   string        `json:"type"`
			Task   *tsTask       `json:"task"`
			Result *tsToolResult `json:"result"`
			Error  *tsError      `json:"error"`
		}
		out := runTS[struct {
			Messages      []message         `json:"messages"`
			GetTask       tsAttempt[tsTask] `json:"getTask"`
			Notifications []tsTask          `json:"notifications"`
			ClientErrors  []string          `json:"clientErrors"`
		}](t, "task_stream", e.thread("ts-stream"), testUserToken,
			tsInput{Tool: "demo_submit_job", Arguments: map[string]any{"duration_seconds": 1}})
		msgs := out.Messages
		require.GreaterOrEqual(t, len(msgs), 3, "taskCreated, taskStatus…, result: %+v", msgs)

		created := msgs[0]
		require.Equal(t, "taskCreated", created.Type)
		id := created.Task.TaskID
		require.Regexp(t, tsTaskID, id)
		require.Equal(t, "working", created.Task.Status)
		require.NotNil(t, created.Task.PollInterval)
		require.Equal(t, 1000, *created.Task.PollInterval, "mcp_tasks.poll_interval_seconds × 1000")

		require.Nil(t, out.GetTask.Error)
		require.Equal(t, id, out.GetTask.Result.TaskID)
		require.Contains(t, []string{"working", "completed"}, out.GetTask.Result.Status)

		// The SDK polled tasks/get until the task was terminal, then read
		// tasks/result.
		for _, m := range msgs[1 : len(msgs)-1] {
			require.Equal(t, "taskStatus", m.Type, "%+v", m)
			require.Equal(t, id, m.Task.TaskID)
		}
		last := msgs[len(msgs)-2].Task
		require.Equal(t, "completed", last.Status)
		require.Nil(t, last.PollInterval, "a terminal task has no pollInterval")
		final := msgs[len(msgs)-1]
		require.Equal(t, "result", final.Type, "%+v", final)
		require.False(t, final.Result.IsError)
		require.Equal(t, map[string]any{"answer": 42.0}, final.Result.StructuredContent)
		require.Equal(t, []tsContent{{Type: "text", Text: `{"answer":42}`}}, final.Result.Content)
		require.Equal(t, map[string]any{"taskId": id}, final.Result.Meta["io.modelcontextprotocol/related-task"])

		// The GET stream pushed the completion, in a shape the SDK accepts.
		require.Empty(t, out.ClientErrors)
		var pushed []string
		for _, n := range out.Notifications {
			require.Equal(t, id, n.TaskID, "only this thread's task")
			pushed = append(pushed, n.Status)
		}
		require.Contains(t, pushed, "completed", "notifications/tasks/status: %v", pushed)

		// The same row as the REST API.
		_, d := get(t, e.m.URL()+"/api/threads/ts-stream/mcp-tasks/"+id, testUserToken)
		require.Equal(t, "completed", d["status"])
		require.Equal(t, map[string]any{"answer": 42.0}, d["result"])
		completed = id
	})

	t.Run("cancel a running task", func(t *testing.T) {
		task := e.createTask(t, "ts-cancel", map[string]any{"duration_seconds": 600})
		out := runTS[tsAttempt[tsTask]](t, "cancel_task", e.thread("ts-cancel"), testUserToken, tsInput{TaskID: task.TaskID})
		require.Nil(t, out.Error)
		require.Equal(t, task.TaskID, out.Result.TaskID)
		require.Equal(t, "cancelled", out.Result.Status)

		// The remote job was cancelled: the REST detail says so, and so
		// does the demo server.
		_, d := get(t, e.m.URL()+"/api/threads/ts-cancel/mcp-tasks/"+task.TaskID, testUserToken)
		require.Equal(t, "cancelled", d["status"])
		require.Equal(t, true, d["cancel_requested"])
		job := jobStats(t, e.taskEnv, "ts-cancel").Jobs[remoteID(t, e.m, task.TaskID)]
		require.Equal(t, "cancelled", job.Status)
		require.Equal(t, 1, job.Submits)
		require.Positive(t, job.CancelCalls, "the demo server saw the cancel")

		// Its result is the cancellation, as an error.
		res := runTS[tsAttempt[tsToolResult]](t, "task_result", e.thread("ts-cancel"), testUserToken, tsInput{TaskID: task.TaskID})
		require.Nil(t, res.Error)
		require.True(t, res.Result.IsError)
		require.Nil(t, d["error"], "a cancelled task has no error text of its own")
		require.Equal(t, []tsContent{{Type: "text", Text: "Task was cancelled."}}, res.Result.Content)
		require.Equal(t, map[string]any{"taskId": task.TaskID}, res.Result.Meta["io.modelcontextprotocol/related-task"])

		// Cancelling it again is -32602.
		again := runTS[tsAttempt[tsTask]](t, "cancel_task", e.thread("ts-cancel"), testUserToken, tsInput{TaskID: task.TaskID})
		require.NotNil(t, again.Error)
		require.Equal(t, -32602, again.Error.Code)
		require.Equal(t, "MCP error -32602: Cannot cancel task: it is already in terminal status 'cancelled'", again.Error.Message)
	})

	t.Run("cancel a completed task", func(t *testing.T) {
		require.NotEmpty(t, completed, "the callToolStream subtest ran first")
		out := runTS[tsAttempt[tsTask]](t, "cancel_task", e.thread("ts-stream"), testUserToken, tsInput{TaskID: completed})
		require.NotNil(t, out.Error)
		require.Equal(t, -32602, out.Error.Code)
		require.Equal(t, "MCP error -32602: Cannot cancel task: it is already in terminal status 'completed'", out.Error.Message)
		_, d := get(t, e.m.URL()+"/api/threads/ts-stream/mcp-tasks/"+completed, testUserToken)
		require.Equal(t, "completed", d["status"])
		require.Equal(t, false, d["cancel_requested"])
	})

	t.Run("failed task", func(t *testing.T) {
		task := e.createTask(t, "ts-failed", map[string]any{"duration_seconds": 0.5, "outcome": "failed", "error": "disk full"})
		res := runTS[tsAttempt[tsToolResult]](t, "task_result", e.thread("ts-failed"), testUserToken, tsInput{TaskID: task.TaskID})
		require.Nil(t, res.Error)
		require.True(t, res.Result.IsError)
		require.Equal(t, []tsContent{{Type: "text", Text: "disk full"}}, res.Result.Content)
		require.Nil(t, res.Result.StructuredContent)
		require.Equal(t, map[string]any{"taskId": task.TaskID}, res.Result.Meta["io.modelcontextprotocol/related-task"])

		got := runTS[tsAttempt[tsTask]](t, "get_task", e.thread("ts-failed"), testUserToken, tsInput{TaskID: task.TaskID})
		require.Nil(t, got.Error)
		require.Equal(t, "failed", got.Result.Status)
		require.Equal(t, "disk full", got.Result.StatusMessage)
	})

	t.Run("another thread's or user's task", func(t *testing.T) {
		task := e.createTask(t, "ts-owner", map[string]any{"duration_seconds": 600})
		type methods struct {
			GetTask       tsAttempt[tsTask]       `json:"getTask"`
			GetTaskResult tsAttempt[tsToolResult] `json:"getTaskResult"`
			CancelTask    tsAttempt[tsTask]       `json:"cancelTask"`
		}
		requireAllNotFound := func(t *testing.T, out methods) {
			t.Helper()
			requireTaskNotFound(t, out.GetTask.Error, task.TaskID, "tasks/get")
			requireTaskNotFound(t, out.GetTaskResult.Error, task.TaskID, "tasks/result")
			requireTaskNotFound(t, out.CancelTask.Error, task.TaskID, "tasks/cancel")
		}
		// The same user on another thread, in both forms of the endpoint.
		requireAllNotFound(t, runTS[methods](t, "task_methods", e.thread("ts-other"), testUserToken, tsInput{TaskID: task.TaskID}))
		requireAllNotFound(t, runTS[methods](t, "task_methods", e.m.URL()+"/mcp", testUserToken, tsInput{TaskID: task.TaskID}))
		// Another user on a thread of theirs.
		requireAllNotFound(t, runTS[methods](t, "task_methods", e.thread("ts-bob"), tsBobToken, tsInput{TaskID: task.TaskID}))
		// Another user on the owner's thread id: thread ids are per user,
		// so that is a thread of his own, without the owner's task.
		requireAllNotFound(t, runTS[methods](t, "task_methods", e.thread("ts-owner"), tsBobToken, tsInput{TaskID: task.TaskID}))
		// A deleted thread is refused with a JSON-RPC error the SDK shows.
		code, _, out := send(t, http.MethodDelete, e.m.URL()+"/api/threads/ts-bob", tsBobToken, "")
		require.Equal(t, http.StatusNoContent, code, out)
		conn := runTS[tsAttempt[struct{}]](t, "connect", e.thread("ts-bob"), tsBobToken, tsInput{})
		require.NotNil(t, conn.Error)
		require.Equal(t, "StreamableHTTPError", conn.Error.Name)
		require.Equal(t, 410, conn.Error.Code)
		require.Contains(t, conn.Error.Message, "thread was deleted", "the SDK shows the JSON-RPC error's message")

		// Nor does another thread list it.
		type list struct {
			Tasks []tsTask `json:"tasks"`
		}
		other := runTS[tsAttempt[list]](t, "list_tasks", e.thread("ts-other"), testUserToken, tsInput{})
		require.Nil(t, other.Error)
		require.Empty(t, other.Result.Tasks)
		own := runTS[tsAttempt[list]](t, "list_tasks", e.thread("ts-owner"), testUserToken, tsInput{})
		require.Nil(t, own.Error)
		require.Len(t, own.Result.Tasks, 1)
		require.Equal(t, task.TaskID, own.Result.Tasks[0].TaskID)

		// None of it touched the task.
		_, d := get(t, e.m.URL()+"/api/threads/ts-owner/mcp-tasks/"+task.TaskID, testUserToken)
		require.Contains(t, []any{"submitted", "working"}, d["status"])
		require.Equal(t, false, d["cancel_requested"])

		// The owner reaches it through /mcp with Mcpflow-Thread-Id.
		owner := tsInput{TaskID: task.TaskID, Headers: map[string]string{"Mcpflow-Thread-Id": "ts-owner"}}
		got := runTS[tsAttempt[tsTask]](t, "get_task", e.m.URL()+"/mcp", testUserToken, owner)
		require.Nil(t, got.Error)
		require.Equal(t, "working", got.Result.Status)
		cancelled := runTS[tsAttempt[tsTask]](t, "cancel_task", e.m.URL()+"/mcp", testUserToken, owner)
		require.Nil(t, cancelled.Error)
		require.Equal(t, "cancelled", cancelled.Result.Status)
	})

	t.Run("secret in _meta", func(t *testing.T) {
		out := runTS[tsAttempt[tsToolResult]](t, "call", e.thread("ts-secret"), testUserToken, tsInput{Tool: "sec_headers",
			Meta: map[string]any{"io.mcpflow/secrets": map[string]any{"tenant_token": tsSecret}}})
		require.Nil(t, out.Error)
		require.False(t, out.Result.IsError, "%+v", out.Result.Content)
		// The upstream's own report of the headers its call arrived with.
		headers := out.Result.StructuredContent["headers"].(map[string]any)
		require.Equal(t, []any{tsSecret}, headers["X-Tenant-Token"])
		require.NotContains(t, out.Result.StructuredContent, "meta_headers")

		// Without it the call is refused before it reaches the server.
		without := runTS[tsAttempt[tsToolResult]](t, "call", e.thread("ts-secret"), testUserToken, tsInput{Tool: "sec_headers"})
		require.Nil(t, without.Error)
		require.True(t, without.Result.IsError)
		require.Len(t, without.Result.Content, 1)
		require.Contains(t, without.Result.Content[0].Text, "needs request-scoped credential(s) tenant_token")

		logs := e.logs.String()
		require.Contains(t, logs, "mcp_method=tools/call", "the log saw the calls")
		require.NotContains(t, logs, tsSecret, "the secret is in no log line")
	})

	t.Run("HTTP auth", func(t *testing.T) {
		for _, c := range []struct {
			name, token string
			status      int
		}{
			{"no token", "", 401},
			{"unknown token", "not-a-known-token", 401},
			{"admin token", testAdminToken, 403},
		} {
			t.Run(c.name, func(t *testing.T) {
				out := runTS[struct {
					tsAttempt[struct{}]
					Responses []struct {
						Method          string  `json:"method"`
						Status          int     `json:"status"`
						WWWAuthenticate *string `json:"wwwAuthenticate"`
					} `json:"responses"`
				}](t, "connect", e.thread("ts-auth"), c.token, tsInput{})
				require.Nil(t, out.Result)
				require.NotNil(t, out.Error)
				require.Equal(t, "StreamableHTTPError", out.Error.Name)
				require.Equal(t, c.status, out.Error.Code)
				require.Len(t, out.Responses, 1, "the SDK gives up after the initialize POST")
				require.Equal(t, "POST", out.Responses[0].Method)
				require.Equal(t, c.status, out.Responses[0].Status)
				if c.status == 401 {
					require.NotNil(t, out.Responses[0].WWWAuthenticate)
					require.Regexp(t, `^Bearer\b`, *out.Responses[0].WWWAuthenticate)
				}
			})
		}
	})
}

// A session and a task outlive mcpflow: a task created before a restart is
// answered, in the same session, by the mcpflow that runs after it.
func TestMCPEndpointTypeScriptSDKRestart(t *testing.T) {
	tsClientScript(t)
	e := startTSEnv(t)
	created := runTS[tsAttempt[tsTask]](t, "create_task", e.thread("ts-restart"), testUserToken,
		tsInput{Tool: "demo_submit_job", Arguments: map[string]any{"duration_seconds": 3}})
	require.Nil(t, created.Error)
	id := created.Result.TaskID
	require.Regexp(t, tsTaskID, id)
	require.Equal(t, "working", created.Result.Status)
	require.Regexp(t, `^mcp-session-[0-9a-f]{32}$`, created.SessionID)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, e.m.Close(ctx))
	e.taskEnv = e.start(t) // the same config: the same SQLite file, Temporal and address

	res := runTS[tsAttempt[tsToolResult]](t, "task_result", e.thread("ts-restart"), testUserToken,
		tsInput{TaskID: id, SessionID: created.SessionID})
	require.Nil(t, res.Error)
	require.Equal(t, created.SessionID, res.SessionID)
	require.Equal(t, []string{"tasks/result"}, res.Sent, "the SDK resumed the session: no initialize")
	require.False(t, res.Result.IsError)
	require.Equal(t, map[string]any{"answer": 42.0}, res.Result.StructuredContent)
	require.Equal(t, map[string]any{"taskId": id}, res.Result.Meta["io.modelcontextprotocol/related-task"])
	e.waitStatus(t, "ts-restart", id, "completed")
}
