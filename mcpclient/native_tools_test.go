package mcpclient_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
	"github.com/mcpflow/mcpflow/mcpclient"
)

// TestRuntimeNativeTaskTools pins which tools become durable native MCP
// task tools: taskSupport "required" ones while the task runtime runs,
// "optional" ones only on a server with native_tasks; what the listing
// shows of them; and a "required" tool without the task runtime.
func TestRuntimeNativeTaskTools(t *testing.T) {
	t.Parallel()
	srv := tasksrv.Start(t)
	b := newRuntime(t, doc{"mcpServers": doc{
		"tasks": doc{"type": "http", "url": srv.URL},
		"opt":   doc{"type": "http", "url": srv.URL, "native_tasks": true},
	}})

	// No task runtime: listed as plain tools; a required one answers a
	// tool error, an optional one runs as a plain call.
	tools := byName(b.list(t))
	for _, name := range []string{"tasks_report", "tasks_maybe", "opt_maybe", "opt_plain"} {
		require.Contains(t, tools, name)
		require.Nil(t, tools[name].TaskToolset, name)
	}
	res := b.call(t, "tasks_report", map[string]any{"topic": "x"})
	require.Contains(t, errorText(t, res), "MCP tool 'report' of server 'tasks' runs only as a task")
	require.Contains(t, errorText(t, res), "mcp_tasks.enabled=true")
	require.Zero(t, srv.Count("tools/call"), "nothing reached the server")
	require.Equal(t, "maybe: a", text(t, b.call(t, "opt_maybe", map[string]any{"word": "a"})))

	type submitted struct {
		tool    mcpflow.Tool
		toolset config.TaskToolset
	}
	got := make(chan submitted, 4)
	b.rt.SetSubmitter(func(_ context.Context, _ mcpflow.ToolCall, tool mcpflow.Tool, ts config.TaskToolset) (*mcpflow.ToolResult, error) {
		got <- submitted{tool, ts}
		return &mcpflow.ToolResult{StructuredContent: map[string]any{"task_id": "mcp-task-x"}}, nil
	})
	tools = byName(b.list(t))
	for name, toolset := range map[string]string{"tasks_report": "report", "tasks_forever": "forever", "opt_report": "report", "opt_maybe": "maybe"} {
		require.NotNil(t, tools[name].TaskToolset, name)
		require.Equal(t, toolset, *tools[name].TaskToolset, "%s: task_toolset is the raw tool name", name)
	}
	require.Equal(t, "Writes a report on a topic.\n\nSubmitted as durable background task 'report'; returns an mcpflow task ID immediately and status polling is handled automatically.",
		tools["tasks_report"].Description)
	require.Nil(t, tools["tasks_maybe"].TaskToolset, "optional without native_tasks stays an ordinary call")
	require.Nil(t, tools["opt_plain"].TaskToolset)
	require.Equal(t, "maybe: b", text(t, b.call(t, "tasks_maybe", map[string]any{"word": "b"})))

	res = b.call(t, "tasks_report", map[string]any{"topic": "x"})
	require.Equal(t, map[string]any{"task_id": "mcp-task-x"}, res.StructuredContent)
	s := <-got
	require.Equal(t, "tasks", s.tool.Server)
	require.Equal(t, config.TaskToolset{Name: "report", SubmitTool: "report", Native: true}, s.toolset)
	b.call(t, "opt_maybe", nil)
	s = <-got
	require.Equal(t, config.TaskToolset{Name: "maybe", SubmitTool: "maybe", Native: true}, s.toolset)

	// Removing the submitter lists them plainly again.
	b.rt.SetSubmitter(nil)
	require.Nil(t, byName(b.list(t))["tasks_report"].TaskToolset)

	cur, err := b.rt.Server(t.Context(), "opt")
	require.NoError(t, err)
	require.True(t, cur.NativeTasks)
	_, err = b.rt.Server(t.Context(), "nope")
	requireCode(t, err, mcpflow.ENotFound)
}

// TestRuntimeNativeTasksFrozen pins that a server with native_tasks is a
// task server: frozen at start-up, its tools fail with the restart error
// after its runtime configuration changes, while a server with only
// "required" tools is not frozen.
func TestRuntimeNativeTasksFrozen(t *testing.T) {
	t.Parallel()
	srv := tasksrv.Start(t)
	start := doc{"mcpServers": doc{
		"opt":   doc{"type": "http", "url": srv.URL, "native_tasks": true},
		"tasks": doc{"type": "http", "url": srv.URL},
	}}
	b := newRuntime(t, start, func(o *mcpclient.Options) {
		data, _ := json.Marshal(start)
		p := filepath.Join(t.TempDir(), "start.json")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		ext, err := config.LoadExtensions(p, nil)
		require.NoError(t, err)
		o.FrozenTaskServers = map[string]config.Server{}
		for i := range ext.Servers {
			if s := &ext.Servers[i]; mcpclient.IsTaskServer(s) {
				o.FrozenTaskServers[s.Name] = *s
			}
		}
	})
	require.Equal(t, "plain: a", text(t, b.call(t, "opt_plain", map[string]any{"word": "a"})))

	for name, change := range map[string]func(d doc){
		"timeout": func(d doc) { d["mcpServers"].(doc)["opt"].(doc)["tool_call_timeout"] = 5 },
		"off":     func(d doc) { d["mcpServers"].(doc)["opt"].(doc)["native_tasks"] = false },
	} {
		data, _ := json.Marshal(start)
		var d doc
		require.NoError(t, json.Unmarshal(data, &d))
		change(d)
		d["mcpServers"].(doc)["tasks"].(doc)["tool_call_timeout"] = 7 // not frozen: free to change
		b.write(t, d)
		b.settle()
		ctx, cancel := context.WithTimeout(t.Context(), generous)
		_, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "opt_plain"})
		cancel()
		requireCode(t, err, mcpflow.EUnavailable)
		require.Contains(t, mcpflow.ErrorMessage(err), "configuration changed after mcpflow startup (opt)", name)
		require.Equal(t, "plain: b", text(t, b.call(t, "tasks_plain", map[string]any{"word": "b"})), name)
	}
}
