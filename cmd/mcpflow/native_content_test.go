package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/tasksrv"
)

// TestNativeTaskResultBlocks: a native task's result reaches an MCP client
// as the upstream's own content blocks and structuredContent (issue 25,
// point 4), not as one text block holding their JSON. The Go task server's
// chart tool answers an image and two text blocks (one annotated) with
// structuredContent, or the blocks alone; a 2025-11-25 mcp-go client reads
// them with tasks/result, a 2026-07-28 client of the Tasks extension in
// tasks/get, and REST's result stays what it was.
func TestNativeTaskResultBlocks(t *testing.T) {
	srv := tasksrv.Start(t)
	ext := fmt.Sprintf(`{"mcpServers": {"tasks": {"type": "http", "url": %q, "native_tasks": true}}}`, srv.URL)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", ext)
	e := &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
	c, _ := mcpGoClient(t, e.m.URL()+"/mcp/threads/blocks", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// result runs the chart tool as a task through the MCP endpoint and
	// returns its tasks/result, typed by mcp-go and as it came on the wire.
	result := func(t *testing.T, args map[string]any) (string, *mcp.TaskResultResult, map[string]json.RawMessage) {
		t.Helper()
		created, rpcErr, err := taskCall(ctx, c, "tasks_"+tasksrv.ToolChart, args)
		require.NoError(t, err)
		require.Nil(t, rpcErr)
		id := created.Task.TaskId
		res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
		require.NoError(t, err)
		resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
			ID: mcp.NewRequestId(time.Now().UnixNano()), Method: string(mcp.MethodTasksResult), Params: mcp.TaskResultParams{TaskId: id}})
		require.NoError(t, err)
		require.Nil(t, resp.Error)
		var wire map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(resp.Result, &wire))
		return id, res, wire
	}
	requireChart := func(t *testing.T, content []mcp.Content, title string) {
		t.Helper()
		require.Len(t, content, 3, "the upstream's three blocks, not one text block of JSON: %+v", content)
		img, ok := content[0].(mcp.ImageContent)
		require.True(t, ok, "an image block: %#v", content[0])
		require.Equal(t, tasksrv.ChartPNG, img.Data)
		require.Equal(t, "image/png", img.MIMEType)
		text, ok := content[1].(mcp.TextContent)
		require.True(t, ok, "a text block: %#v", content[1])
		require.Equal(t, "Chart of "+title, text.Text)
		note, ok := content[2].(mcp.TextContent)
		require.True(t, ok, "a text block: %#v", content[2])
		require.Equal(t, tasksrv.ChartNote, note.Text)
		require.NotNil(t, note.Annotations, "the block's annotations came along")
		require.Equal(t, []mcp.Role{mcp.RoleUser}, note.Annotations.Audience)
		require.NotNil(t, note.Annotations.Priority)
		require.Equal(t, 0.5, *note.Annotations.Priority)
	}

	t.Run("blocks and structuredContent", func(t *testing.T) {
		id, res, wire := result(t, map[string]any{"title": "tides", "delay_ms": 50})
		require.False(t, res.IsError)
		requireChart(t, res.Content, "tides")
		require.JSONEq(t, `{"title":"tides","points":`+tasksrv.Pages+`}`, string(wire["structuredContent"]),
			"the upstream's structuredContent, its big number exact")
		require.Contains(t, string(wire["structuredContent"]), tasksrv.Pages)
		require.JSONEq(t, `{"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}}`, string(wire["_meta"]))

		// REST's result is the structuredContent, as before.
		d := e.waitStatus(t, "blocks", id, "completed")
		require.Equal(t, map[string]any{"title": "tides", "points": 9007199254740993.0}, d["result"])
		row, err := e.m.DB.GetTask(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, mcpflow.DriverNative, row.DriverName)
		require.True(t, row.ResultStructured)
		require.NotEmpty(t, row.Content)

		// A 2026-07-28 client of the Tasks extension reads the same
		// result inline in tasks/get.
		c26 := &rpc2026{url: e.m.URL() + "/mcp/threads/blocks", token: testUserToken, ext: true}
		got := c26.call(t, "tasks/get", id, map[string]any{"taskId": id})
		require.Equal(t, "completed", got["status"], "%v", got)
		inline := got["result"].(map[string]any)
		require.Equal(t, map[string]any{"title": "tides", "points": 9007199254740993.0}, inline["structuredContent"])
		blocks := inline["content"].([]any)
		require.Len(t, blocks, 3, "%v", inline)
		require.Equal(t, map[string]any{"type": "image", "data": tasksrv.ChartPNG, "mimeType": "image/png"}, blocks[0])
		require.Equal(t, map[string]any{"type": "text", "text": "Chart of tides"}, blocks[1])
	})

	t.Run("blocks without structuredContent", func(t *testing.T) {
		id, res, wire := result(t, map[string]any{"title": "waves", "blocks_only": true, "delay_ms": 50})
		require.False(t, res.IsError)
		requireChart(t, res.Content, "waves")
		require.Nil(t, res.StructuredContent, "the upstream had none")
		require.NotContains(t, wire, "structuredContent")

		// REST's result is the blocks, as before.
		d := e.waitStatus(t, "blocks", id, "completed")
		blocks, ok := d["result"].([]any)
		require.True(t, ok, "%v", d["result"])
		require.Len(t, blocks, 3)
		require.Equal(t, "Chart of waves", blocks[1].(map[string]any)["text"])
	})
}
