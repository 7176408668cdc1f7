package main

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// mcpGoClient connects mcp-go's client (its default negotiation: a
// server/discover probe, then initialize) to an MCP endpoint URL, with the
// GET stream open.
func mcpGoClient(t *testing.T, url string, headers map[string]string) (*mcpclient.Client, *mcp.InitializeResult) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + testUserToken}
	for k, v := range headers {
		h[k] = v
	}
	//lint:ignore SA1019 the GET stream is how 2025-11-25, the revision mcpflow speaks, pushes notifications
	c, err := mcpclient.NewStreamableHttpClient(url, transport.WithHTTPHeaders(h), transport.WithContinuousListening())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	// Start's context is the GET stream's: it lives as long as the client.
	require.NoError(t, c.Start(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcpflow-e2e", Version: "1"}}})
	require.NoError(t, err)
	return c, init
}

// taskCall sends a task-augmented tools/call (mcp-go has no typed call for
// it) and returns the created task, or the JSON-RPC error.
func taskCall(ctx context.Context, c *mcpclient.Client, name string, args map[string]any) (*mcp.CreateTaskResult, *mcp.JSONRPCErrorDetails, error) {
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
		ID: mcp.NewRequestId(time.Now().UnixNano()), Method: string(mcp.MethodToolsCall),
		Params: mcp.CallToolParams{Name: name, Arguments: args, Task: &mcp.TaskParams{}}})
	if err != nil {
		return nil, nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error, nil
	}
	var out mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &out); err != nil {
		return nil, nil, err
	}
	return &out, nil, nil
}

// TestMCPEndpointMCPGoClient runs a durable task's whole life through the
// MCP endpoint with mcp-go's client, over both forms of the endpoint.
func TestMCPEndpointMCPGoClient(t *testing.T) {
	e := startTaskEnv(t)
	for _, form := range []struct {
		name, path string
		headers    map[string]string
		thread     string
	}{
		{"path", "/mcp/threads/mcp-go-1", nil, "mcp-go-1"},
		{"header", "/mcp", map[string]string{"Mcpflow-Thread-Id": "mcp-go-2"}, "mcp-go-2"},
	} {
		t.Run(form.name, func(t *testing.T) {
			c, init := mcpGoClient(t, e.m.URL()+form.path, form.headers)
			require.Equal(t, mcp.ProtocolVersion20251125, init.ProtocolVersion)
			require.Equal(t, "mcpflow", init.ServerInfo.Name)
			require.NotNil(t, init.Capabilities.Tasks)
			require.NotNil(t, init.Capabilities.Tasks.Requests.Tools.Call)
			require.NotNil(t, init.Capabilities.Tasks.Cancel)
			require.NotNil(t, init.Capabilities.Tasks.List)

			var mu sync.Mutex
			var statuses []mcp.Task
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method != string(mcp.MethodNotificationTasksStatus) {
					return
				}
				b, _ := json.Marshal(n.Params.AdditionalFields)
				var task mcp.Task
				if json.Unmarshal(b, &task) == nil {
					mu.Lock()
					statuses = append(statuses, task)
					mu.Unlock()
				}
			})

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			require.NoError(t, err)
			byName := map[string]mcp.Tool{}
			for _, tool := range tools.Tools {
				byName[tool.Name] = tool
			}
			require.Contains(t, byName, "demo_add")
			require.Contains(t, byName, "list_background_tasks", "the built-ins are listed while the task runtime runs")
			require.NotContains(t, byName, "demo_get_job_status", "status tools are hidden")
			require.NotNil(t, byName["demo_submit_job"].Execution)
			require.Equal(t, mcp.TaskSupportOptional, byName["demo_submit_job"].Execution.TaskSupport)
			require.Nil(t, byName["demo_add"].Execution)

			// An ordinary call.
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "demo_add", Arguments: map[string]any{"a": 2, "b": 3}}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Equal(t, "5", res.Content[0].(mcp.TextContent).Text)

			// A task-augmented call answers the local task id at once.
			created, rpcErr, err := taskCall(ctx, c, "demo_submit_job", map[string]any{"duration_seconds": 1, "label": "mcp-go"})
			require.NoError(t, err)
			require.Nil(t, rpcErr)
			id := created.Task.TaskId
			require.Regexp(t, `^mcp-task-[0-9a-f]{32}$`, id)
			require.Equal(t, mcp.TaskStatusWorking, created.Task.Status)
			require.NotNil(t, created.Task.PollInterval)
			require.EqualValues(t, 1000, *created.Task.PollInterval)
			require.Nil(t, created.Task.TTL)

			got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
			require.NoError(t, err)
			require.Equal(t, id, got.TaskId)

			// tasks/result waits until the task is terminal.
			result, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
			require.NoError(t, err)
			require.False(t, result.IsError)
			require.NotNil(t, result.StructuredContent)
			done, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
			require.NoError(t, err)
			require.Equal(t, mcp.TaskStatusCompleted, done.Status)

			// The same row as the REST API.
			_, detail := get(t, e.m.URL()+"/api/threads/"+form.thread+"/mcp-tasks/"+id, testUserToken)
			require.Equal(t, "completed", detail["status"])

			// The GET stream pushed the completion.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range statuses {
					if s.TaskId == id && s.Status == mcp.TaskStatusCompleted {
						return true
					}
				}
				return false
			}, 30*time.Second, 50*time.Millisecond, "no notifications/tasks/status for the completed task")

			// Cancel a long task: the remote job is cancelled.
			long, rpcErr, err := taskCall(ctx, c, "demo_submit_job", map[string]any{"duration_seconds": 600})
			require.NoError(t, err)
			require.Nil(t, rpcErr)
			cancelled, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: long.Task.TaskId}})
			require.NoError(t, err)
			require.Equal(t, mcp.TaskStatusCancelled, cancelled.Status)
			_, err = c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: long.Task.TaskId}})
			require.ErrorIs(t, err, mcp.ErrInvalidParams, "cancelling a finished task")
			failed, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: long.Task.TaskId}})
			require.NoError(t, err)
			require.True(t, failed.IsError)

			list, err := c.ListTasks(ctx, mcp.ListTasksRequest{})
			require.NoError(t, err)
			var ids []string
			for _, task := range list.Tasks {
				ids = append(ids, task.TaskId)
			}
			require.Equal(t, []string{long.Task.TaskId, id}, ids, "the thread's tasks, newest first")

			// Errors.
			_, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "nope"}})
			require.ErrorIs(t, err, mcp.ErrInvalidParams)
			_, rpcErr, err = taskCall(ctx, c, "demo_add", map[string]any{"a": 1, "b": 2})
			require.NoError(t, err)
			require.NotNil(t, rpcErr)
			require.Equal(t, mcp.METHOD_NOT_FOUND, rpcErr.Code)
			_, err = c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: "mcp-task-00000000000000000000000000000000"}})
			require.True(t, errors.Is(err, mcp.ErrInvalidParams), "%v", err)
		})
	}
}
