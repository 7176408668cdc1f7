package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.CleanupBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// setupTools is setup with the MCP tool routes backed by a real Runtime
// reading ext as its extensions_config.json.
func setupTools(t testing.TB, ext map[string]any) *testBundle {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(dir, "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{
		AdminTokens: []string{adminToken},
		Users:       []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}},
	})
	require.NoError(t, err)
	data, err := json.Marshal(ext)
	require.NoError(t, err)
	path := filepath.Join(dir, "extensions_config.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := mcpclient.NewRuntime(mcpclient.Options{ExtensionsPath: path, WorkspaceRoot: filepath.Join(dir, "workspace"), Logger: log})
	t.Cleanup(func() { _ = rt.Close() })
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: rt, Logger: log})
	return &testBundle{srv: srv, logs: logs, db: db}
}

// startDemoHTTP runs the demo MCP server over transport ("sse" or "http")
// on 127.0.0.1 and returns its endpoint and a function that kills it (also
// run at cleanup).
func startDemoHTTP(t testing.TB, transport string) (string, func()) {
	t.Helper()
	d := testenv.StartDemo(t, transport, "--workdir", t.TempDir())
	return d.URL, d.Kill
}

func demoExt(t *testing.T) map[string]any {
	return map[string]any{"mcpServers": map[string]any{
		"demo": map[string]any{
			"type":              "stdio",
			"command":           testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"),
			"tool_call_timeout": 1,
			"tools":             map[string]any{"echo": map[string]any{"routing": map[string]any{"mode": "prefer", "keywords": []string{"greeting", "<hello>"}}}},
			"task_toolsets": []any{map[string]any{
				"name": "Demo job", "submit_tool": "submit_job", "status_tool": "get_job_status", "cancel_tool": "cancel_job",
			}},
		},
	}}
}

// TestToolRoutesList pins GET /api/threads/{id}/tools: its shape, that it
// starts a new thread, and that thread ids are per user.
func TestToolRoutesList(t *testing.T) {
	t.Parallel()
	b := setupTools(t, demoExt(t))
	status, body := b.do(t, "GET", "/api/threads/t-new/tools", aliceToken, "")
	require.Equal(t, 200, status, "%v", body)
	require.Len(t, body, 2, "tools and routing_hints: %v", body)
	require.Equal(t, "<mcp_routing_hints>\nWhen the user's request involves greeting or &lt;hello&gt;: prefer the `demo_echo` tool.\n</mcp_routing_hints>", body["routing_hints"])
	tools := map[string]map[string]any{}
	for _, v := range body["tools"].([]any) {
		tl := v.(map[string]any)
		for _, k := range []string{"name", "description", "input_schema", "server", "original_name", "routing", "task_toolset"} {
			require.Contains(t, tl, k)
		}
		for k := range tl {
			// The server's own fields, where it gave them (the demo
			// server's tools have mcp-go's default annotations).
			require.Contains(t, []string{"name", "description", "input_schema", "server", "original_name", "routing", "task_toolset",
				"title", "annotations", "output_schema", "icons", "_meta", "execution"}, k, "%v", tl)
		}
		require.Contains(t, tl, "annotations", "%v", tl)
		tools[tl["name"].(string)] = tl
	}
	require.Len(t, tools, len(demomcp.ToolNames)-2, "status and cancel tools are hidden")
	echo := tools["demo_echo"]
	require.Equal(t, "Echo a message back as text.", echo["description"])
	require.Equal(t, "demo", echo["server"])
	require.Equal(t, "echo", echo["original_name"])
	require.Equal(t, map[string]any{"mode": "prefer", "priority": 0.0, "keywords": []any{"greeting", "<hello>"}}, echo["routing"])
	require.Nil(t, echo["task_toolset"])
	schema := echo["input_schema"].(map[string]any)
	require.Equal(t, "object", schema["type"])
	require.Contains(t, schema["properties"], "message")
	require.Nil(t, tools["demo_add"]["routing"])
	require.Equal(t, "Demo job", tools["demo_submit_job"]["task_toolset"])
	require.NotContains(t, tools, "demo_get_job_status")

	status, body = b.do(t, "GET", "/api/threads/t-new", aliceToken, "")
	require.Equal(t, 200, status, "listing tools starts the thread: %v", body)

	// Thread ids are per user: on alice's id, bob's tool routes start a
	// thread of his own, as on any id he has not used.
	status, body = b.do(t, "GET", "/api/threads/t-new/tools", bobToken, "")
	require.Equal(t, 200, status, "%v", body)
	status, body = b.do(t, "POST", "/api/threads/t-new/tools/demo_echo/call", bobToken, `{"arguments":{"message":"x"}}`)
	require.Equal(t, 200, status, "%v", body)
	status, _ = b.do(t, "DELETE", "/api/threads/t-new", bobToken, "")
	require.Equal(t, 204, status)
	status, _ = b.do(t, "GET", "/api/threads/t-new", aliceToken, "")
	require.Equal(t, 200, status, "bob's delete did not touch alice's thread")

	status, _ = b.do(t, "GET", "/api/threads/t-new/tools", adminToken, "")
	require.Equal(t, 403, status, "admin tokens do not use tools")
	status, _ = b.do(t, "GET", "/api/threads/t-new/tools", "", "")
	require.Equal(t, 401, status)

	status, _ = b.do(t, "DELETE", "/api/threads/t-new", aliceToken, "")
	require.Equal(t, 204, status)
	status, body = b.do(t, "GET", "/api/threads/t-new/tools", aliceToken, "")
	require.Equal(t, 410, status)
	require.Equal(t, "gone", errCode(t, body))
	status, _ = b.do(t, "POST", "/api/threads/t-new/tools/demo_echo/call", aliceToken, `{"arguments":{"message":"x"}}`)
	require.Equal(t, 410, status)
}

// TestToolRoutesCall pins POST /api/threads/{id}/tools/{tool}/call: the
// answer shape, tool errors, unknown tools, bad arguments and timeouts.
func TestToolRoutesCall(t *testing.T) {
	t.Parallel()
	b := setupTools(t, demoExt(t))
	call := func(thread, tool, body string) (int, map[string]any) {
		t.Helper()
		return b.do(t, "POST", "/api/threads/"+thread+"/tools/"+tool+"/call", aliceToken, body)
	}
	status, body := call("t-call", "demo_echo", `{"arguments":{"message":"hi"}}`)
	require.Equal(t, 200, status, "%v", body)
	require.Equal(t, map[string]any{
		"content":            []any{map[string]any{"type": "text", "text": "hi"}},
		"structured_content": nil,
		"is_error":           false,
	}, body)
	status, _ = b.do(t, "GET", "/api/threads/t-call", aliceToken, "")
	require.Equal(t, 200, status, "a call on a new thread creates it")

	status, body = call("t-call", "demo_add", `{"arguments":{"a":2,"b":3},"run_id":"run-1","tool_call_id":"call-1"}`)
	require.Equal(t, 200, status, "%v", body)
	require.Equal(t, map[string]any{"sum": 5.0}, body["structured_content"])
	require.Equal(t, false, body["is_error"])

	status, body = call("t-call", "demo_fail", `{"arguments":{"message":"boom"}}`)
	require.Equal(t, 200, status, "a tool error is a 200: %v", body)
	require.Equal(t, true, body["is_error"])
	require.Equal(t, []any{map[string]any{"type": "text", "text": "boom"}}, body["content"])

	for _, empty := range []string{"", "{}", `{"arguments":null}`} {
		status, body = call("t-call", "demo_job_stats", empty)
		require.Equal(t, 200, status, "body %q: %v", empty, body)
		require.Equal(t, false, body["is_error"])
	}

	status, body = call("t-call", "demo_submit_job", `{"arguments":{}}`)
	require.Equal(t, 200, status, "%v", body)
	require.Equal(t, true, body["is_error"])
	require.Contains(t, body["content"].([]any)[0].(map[string]any)["text"], "The MCP task runtime is not initialized")

	status, body = call("t-call", "demo_nope", `{"arguments":{}}`)
	require.Equal(t, 404, status)
	require.Equal(t, "not_found", errCode(t, body))
	status, body = call("t-call", "demo_get_job_status", `{"arguments":{"task_id":"x"}}`)
	require.Equal(t, 404, status, "hidden task tools are not callable")
	require.Equal(t, "not_found", errCode(t, body))

	for _, bad := range []string{`{"arguments":[1,2]}`, `{"arguments":"x"}`, `{"arguments":3}`, `[]`, `{"arguments":{}`, `{"args":{}}`, `{"arguments":{},"run_id":""}`} {
		status, body = call("t-call", "demo_echo", bad)
		require.Equal(t, 400, status, "body %s: %v", bad, body)
		require.Equal(t, "invalid_argument", errCode(t, body))
	}

	// tool_call_timeout (1 s) cuts the 30 s sleep: the 504 comes from it.
	status, body = call("t-call", "demo_slow", `{"arguments":{"seconds":30}}`)
	require.Equal(t, 504, status, "%v", body)
	require.Equal(t, "timeout", errCode(t, body))
	// The session survives a timeout.
	status, body = call("t-call", "demo_echo", `{"arguments":{"message":"after"}}`)
	require.Equal(t, 200, status, "%v", body)
}

// TestToolCallUpstreamGone pins that a call to an SSE/HTTP server that
// went away after discovery is 502 upstream_error, without internals.
func TestToolCallUpstreamGone(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			url, kill := startDemoHTTP(t, transport)
			b := setupTools(t, map[string]any{"mcpServers": map[string]any{"demo": map[string]any{"type": transport, "url": url}}})
			status, body := b.do(t, "GET", "/api/threads/t1/tools", aliceToken, "")
			require.Equal(t, 200, status, "%v", body)
			require.Len(t, body["tools"], len(demomcp.ToolNames))
			status, body = b.do(t, "POST", "/api/threads/t1/tools/demo_echo/call", aliceToken, `{"arguments":{"message":"up"}}`)
			require.Equal(t, 200, status, "%v", body)

			kill()
			status, body = b.do(t, "POST", "/api/threads/t1/tools/demo_echo/call", aliceToken, `{"arguments":{"message":"down"}}`)
			require.Equal(t, 502, status, "%v", body)
			require.Equal(t, "upstream_error", errCode(t, body))
			msg := body["error"].(map[string]any)["message"].(string)
			require.Contains(t, msg, "'demo'")
			require.NotContains(t, msg, "127.0.0.1", "no connection internals in the message")
		})
	}
}

// TestCacheResetRoute pins POST /api/mcp/cache/reset: admin only, its
// answer, and that tools load again on next use.
func TestCacheResetRoute(t *testing.T) {
	t.Parallel()
	b := setupTools(t, demoExt(t))
	status, body := b.do(t, "GET", "/api/threads/t1/tools", aliceToken, "")
	require.Equal(t, 200, status, "%v", body)

	status, body = b.do(t, "POST", "/api/mcp/cache/reset", aliceToken, "")
	require.Equal(t, 403, status)
	require.Equal(t, "forbidden", errCode(t, body))
	status, _ = b.do(t, "POST", "/api/mcp/cache/reset", "", "")
	require.Equal(t, 401, status)

	status, body = b.do(t, "POST", "/api/mcp/cache/reset", adminToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"success": true, "message": "MCP tools cache reset. Tools will reload on next use."}, body)

	status, body = b.do(t, "GET", "/api/threads/t1/tools", aliceToken, "")
	require.Equal(t, 200, status, "%v", body)
	require.Len(t, body["tools"], len(demomcp.ToolNames)-2)
	status, body = b.do(t, "POST", "/api/threads/t1/tools/demo_echo/call", aliceToken, `{"arguments":{"message":"again"}}`)
	require.Equal(t, 200, status, "%v", body)
}

// TestToolRoutesWithoutRuntime pins that the tool routes are absent when
// no tool runtime is wired.
func TestToolRoutesWithoutRuntime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, r := range []struct{ method, path, token string }{
		{"GET", "/api/threads/t1/tools", aliceToken},
		{"POST", "/api/threads/t1/tools/x/call", aliceToken},
		{"POST", "/api/mcp/cache/reset", adminToken},
	} {
		req := httptest.NewRequest(r.method, r.path, nil)
		req.Header.Set("Authorization", "Bearer "+r.token)
		w := httptest.NewRecorder()
		b.srv.Handler().ServeHTTP(w, req)
		require.Equal(t, 404, w.Code, "%s %s", r.method, r.path)
	}
}
