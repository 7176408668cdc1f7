package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// researchTool is server-everything's native MCP task tool
// (taskSupport "required", about 4 s, ttl 5 min, pollInterval 1 s).
const researchTool = "simulate-research-query"

// startNativeEnv runs mcpflow (dev mode) with server-everything over stdio
// ("ever") and streamable HTTP ("everhttp"), neither with native_tasks, and
// the Go task server (internal/testsupport/tasksrv) with native_tasks ("tasks").
func startNativeEnv(t *testing.T) (*taskEnv, *tasksrv.Server) {
	t.Helper()
	entry := testenv.EverythingEntry(t)
	httpURL := testenv.StartEverythingHTTP(t, entry)
	srv := tasksrv.Start(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"]},
  "everhttp": {"type": "http", "url": %q},
  "tasks": {"type": "http", "url": %q, "native_tasks": true}
}}`, entry, httpURL, srv.URL)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\nworkspace: { root: ws }\n", ext)
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}, srv
}

// submitNative calls a native task tool through REST and returns the
// handle's task id.
func (e *taskEnv) submitNative(t *testing.T, thread, tool, taskName, args string) string {
	t.Helper()
	code, out := e.post(t, "/api/threads/"+thread+"/tools/"+tool+"/call", `{"arguments": `+args+`}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"], out)
	sc := out["structured_content"].(map[string]any)
	require.ElementsMatch(t, []string{"task_id", "task_name", "status", "message"}, keys(sc))
	require.Equal(t, taskName, sc["task_name"])
	require.Equal(t, "working", sc["status"], "the upstream task reports working at once")
	return sc["task_id"].(string)
}

// reportText is the text of a research result (its content blocks).
func reportText(t *testing.T, result any) string {
	t.Helper()
	blocks, ok := result.([]any)
	require.True(t, ok, "the result is the content blocks: %v", result)
	require.Len(t, blocks, 1)
	return blocks[0].(map[string]any)["text"].(string)
}

// TestNativeTasksEndToEnd runs native MCP tasks through mcpflow: a
// server-everything tool with taskSupport "required" is listed as a
// durable tool, runs over stdio and streamable HTTP through REST and
// through the MCP endpoint, and cancels upstream with tasks/cancel.
func TestNativeTasksEndToEnd(t *testing.T) {
	e, srv := startNativeEnv(t)

	code, body := get(t, e.m.URL()+"/api/threads/n1/tools", testUserToken)
	require.Equal(t, 200, code)
	tools := map[string]map[string]any{}
	for _, raw := range body["tools"].([]any) {
		tool := raw.(map[string]any)
		tools[tool["name"].(string)] = tool
	}
	for _, name := range []string{"ever_" + researchTool, "everhttp_" + researchTool} {
		require.Contains(t, tools, name)
		require.Equal(t, researchTool, tools[name]["task_toolset"], "task_toolset is the tool's own name")
		require.Equal(t, researchTool, tools[name]["original_name"])
		require.Contains(t, tools[name]["description"], "Submitted as durable background task '"+researchTool+"'")
	}
	require.Nil(t, tools["ever_echo"]["task_toolset"], "tools without task support stay ordinary")
	require.Equal(t, "maybe", tools["tasks_maybe"]["task_toolset"], "optional on a native_tasks server")

	for _, server := range []string{"ever", "everhttp"} {
		t.Run("completed over "+server, func(t *testing.T) {
			id := e.submitNative(t, "n1", server+"_"+researchTool, researchTool, `{"topic": "tides-`+server+`"}`)
			d := e.waitStatus(t, "n1", id, "completed")
			require.Contains(t, reportText(t, d["result"]), "# Research Report: tides-"+server)
			require.Nil(t, d["error"])
			row, err := e.m.DB.GetTask(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, mcpflow.DriverNative, row.DriverName)
			require.Equal(t, map[string]string{mcpflow.DriverDataNativeTool: researchTool}, row.DriverData)
			require.NotEmpty(t, row.RemoteTaskID)
		})
	}

	t.Run("failed", func(t *testing.T) {
		id := e.submitNative(t, "n2", "tasks_explode", "explode", `{"delay_ms": 50}`)
		require.Equal(t, "the reactor melted", e.waitStatus(t, "n2", id, "failed")["error"])
		id = e.submitNative(t, "n2", "tasks_refuse", "refuse", `{"delay_ms": 50}`)
		require.Equal(t, "quota exceeded", e.waitStatus(t, "n2", id, "failed")["error"])
	})

	t.Run("cancel reaches tasks/cancel", func(t *testing.T) {
		id := e.submitNative(t, "n3", "tasks_forever", "forever", `{}`)
		e.waitStatus(t, "n3", id, "working")
		code, d := e.post(t, "/api/threads/n3/mcp-tasks/"+id+"/cancel", "")
		require.Equal(t, 202, code, d)
		d = e.waitStatus(t, "n3", id, "cancelled")
		require.Equal(t, true, d["cancel_requested"])
		require.Equal(t, 1, srv.Count("tasks/cancel"))

		// server-everything's research runs about 4 s: the cancel is sent at
		// once, and on a loaded machine it may still lose the race, so a
		// few tasks are tried; one must end cancelled upstream.
		cancelled := false
		for attempt := 0; attempt < 3 && !cancelled; attempt++ {
			id := e.submitNative(t, "n3", "ever_"+researchTool, researchTool, `{"topic": "cancel-me"}`)
			code, d := e.post(t, "/api/threads/n3/mcp-tasks/"+id+"/cancel", "")
			require.Equal(t, 202, code, d)
			var last map[string]any
			require.Eventually(t, func() bool {
				_, last = get(t, e.m.URL()+"/api/threads/n3/mcp-tasks/"+id, testUserToken)
				s, _ := last["status"].(string)
				return mcpflow.Status(s).IsTerminal()
			}, 90*time.Second, 100*time.Millisecond)
			cancelled = last["status"] == "cancelled"
			if !cancelled {
				require.Equal(t, "completed", last["status"], "the research finished before the cancel landed: %v", last)
			}
		}
		require.True(t, cancelled, "no research task ended cancelled")
	})

	t.Run("MCP endpoint", func(t *testing.T) {
		c, _ := mcpGoClient(t, e.m.URL()+"/mcp/threads/n4", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		require.NoError(t, err)
		var research *mcp.Tool
		for i := range list.Tools {
			if list.Tools[i].Name == "everhttp_"+researchTool {
				research = &list.Tools[i]
			}
		}
		require.NotNil(t, research)
		require.NotNil(t, research.Execution)
		require.Equal(t, mcp.TaskSupportOptional, research.Execution.TaskSupport, "mcpflow runs the task: the host may augment or not")

		created, rpcErr, err := taskCall(ctx, c, "everhttp_"+researchTool, map[string]any{"topic": "mcp-host"})
		require.NoError(t, err)
		require.Nil(t, rpcErr)
		require.Regexp(t, `^mcp-task-[0-9a-f]{32}$`, created.Task.TaskId)
		require.Equal(t, mcp.TaskStatusWorking, created.Task.Status)
		result, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: created.Task.TaskId}})
		require.NoError(t, err)
		require.False(t, result.IsError)
		// The research answers one text block and no structuredContent:
		// the client gets that block, not its JSON in a text block.
		require.Len(t, result.Content, 1, "%+v", result.Content)
		text, ok := result.Content[0].(mcp.TextContent)
		require.True(t, ok, "%#v", result.Content[0])
		require.Contains(t, text.Text, "# Research Report: mcp-host")
		require.False(t, strings.HasPrefix(text.Text, "[{"), "not the blocks re-encoded: %s", text.Text)
		require.Nil(t, result.StructuredContent, "server-everything's research has no structuredContent")

		// Without task augmentation the host gets the handle.
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ever_" + researchTool, Arguments: map[string]any{"topic": "plain"}}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		handle, _ := res.StructuredContent.(map[string]any)
		require.Equal(t, researchTool, handle["task_name"])
	})
}

// TestNativeTasksNeedTheTaskRuntime pins the start-up rule: native_tasks
// needs mcp_tasks.enabled, like task_toolsets.
func TestNativeTasksNeedTheTaskRuntime(t *testing.T) {
	cfg := writeConfig(t, "mcp_tasks: { enabled: false }\n", `{"mcpServers": {"tasks": {"type": "http", "url": "http://127.0.0.1:1/mcp", "native_tasks": true}}}`)
	m := &Main{Mode: ModeServe, ConfigPath: cfg, Env: noEnv}
	err := m.Open(context.Background())
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.ErrorContains(t, err, "mcpServers.tasks.native_tasks: native MCP tasks are enabled for this server, so mcp_tasks.enabled=true is required")
}
