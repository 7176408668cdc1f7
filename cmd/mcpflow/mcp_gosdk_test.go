package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// exchange is one HTTP request the go-sdk client sent to the MCP endpoint
// and what it got back.
type exchange struct {
	httpMethod     string // POST, GET, DELETE
	rpcMethod      string // the JSON-RPC method of a POST ("" for a response)
	protocolHeader string // its MCP-Protocol-Version header
	sessionHeader  string // its Mcp-Session-Id header
	status         int
	rpcError       *int // the JSON-RPC error code of a JSON answer, if any
}

// recordingTransport authenticates the go-sdk client's requests (and names
// the thread for /mcp) and records each exchange, so that the test sees
// what went over the wire: the server/discover probe, the DELETE.
type recordingTransport struct {
	headers map[string]string

	mu  sync.Mutex
	log []exchange
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	ex := exchange{httpMethod: req.Method, protocolHeader: req.Header.Get("Mcp-Protocol-Version"), sessionHeader: req.Header.Get("Mcp-Session-Id")}
	if req.Method == http.MethodPost && req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		ex.rpcMethod = m.Method
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ex.status = resp.StatusCode
	// JSON answers are small and whole; an event stream is left alone.
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &m) == nil && m.Error != nil {
			ex.rpcError = &m.Error.Code
		}
	}
	rt.mu.Lock()
	rt.log = append(rt.log, ex)
	rt.mu.Unlock()
	return resp, nil
}

func (rt *recordingTransport) exchanges() []exchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]exchange(nil), rt.log...)
}

// TestMCPEndpointGoSDKClient drives the MCP endpoint with the official MCP
// Go SDK (an implementation independent of mcp-go, without MCP Tasks),
// over both forms of the endpoint and both revisions: by default it
// negotiates 2026-07-28 with server/discover and then sends every request
// stateless (per-request _meta and headers, no session); pinned to
// 2025-11-25 it initializes a session, which Close ends with DELETE.
// Either way it lists and calls tools, and gets the REST handle of a
// durable task (it does not declare the Tasks extension) that completes.
func TestMCPEndpointGoSDKClient(t *testing.T) {
	e := startTaskEnv(t)
	for _, form := range []struct {
		name, path string
		headers    map[string]string
		thread     string
		version    string // pinned revision; "" negotiates
	}{
		{"2026/path", "/mcp/threads/go-sdk-1", nil, "go-sdk-1", ""},
		{"2026/header", "/mcp", map[string]string{"Mcpflow-Thread-Id": "go-sdk-2"}, "go-sdk-2", ""},
		{"2025/path", "/mcp/threads/go-sdk-3", nil, "go-sdk-3", "2025-11-25"},
		{"2025/header", "/mcp", map[string]string{"Mcpflow-Thread-Id": "go-sdk-4"}, "go-sdk-4", "2025-11-25"},
	} {
		t.Run(form.name, func(t *testing.T) {
			url := e.m.URL() + form.path
			rt := &recordingTransport{headers: map[string]string{"Authorization": "Bearer " + testUserToken}}
			for k, v := range form.headers {
				rt.headers[k] = v
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpflow-e2e-go-sdk", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var opts *mcp.ClientSessionOptions
			if form.version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: form.version}
			}
			session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, opts)
			require.NoError(t, err)
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = session.Close()
				}
			})
			modern := form.version == ""
			init := session.InitializeResult()
			require.NotNil(t, init.ServerInfo)
			require.Equal(t, "mcpflow", init.ServerInfo.Name)
			var posts []exchange
			for _, ex := range rt.exchanges() {
				if ex.httpMethod == http.MethodPost {
					posts = append(posts, ex)
				}
			}
			if modern {
				require.Equal(t, "2026-07-28", init.ProtocolVersion)
				require.NotEmpty(t, posts)
				require.Equal(t, "server/discover", posts[0].rpcMethod)
				require.Equal(t, http.StatusOK, posts[0].status)
				require.Nil(t, posts[0].rpcError, "server/discover answers the revisions and capabilities")
				require.Empty(t, session.ID(), "2026-07-28 has no session")
			} else {
				require.Equal(t, "2025-11-25", init.ProtocolVersion)
				i := slices.IndexFunc(posts, func(ex exchange) bool { return ex.rpcMethod == "initialize" })
				require.GreaterOrEqual(t, i, 0, "%+v", posts)
				require.Equal(t, http.StatusOK, posts[i].status)
				require.Nil(t, posts[i].rpcError)
			}
			sid := session.ID()
			if !modern {
				require.Regexp(t, `^mcp-session-[0-9a-f]{32}$`, sid)
			}

			// tools/list: the REST listing, status and cancel tools hidden.
			tools, err := session.ListTools(ctx, nil)
			require.NoError(t, err)
			byName := map[string]*mcp.Tool{}
			for _, tool := range tools.Tools {
				byName[tool.Name] = tool
			}
			require.Contains(t, byName, "demo_add")
			require.Contains(t, byName, "demo_submit_job")
			require.Contains(t, byName, "list_background_tasks", "the built-ins are listed while the task runtime runs")
			require.NotContains(t, byName, "demo_get_job_status", "status tools are hidden")
			require.NotContains(t, byName, "demo_cancel_job", "cancel tools are hidden")
			schema, ok := byName["demo_submit_job"].InputSchema.(map[string]any)
			require.True(t, ok, "input schema %T", byName["demo_submit_job"].InputSchema)
			props, ok := schema["properties"].(map[string]any)
			require.True(t, ok, "input schema %v", schema)
			require.Contains(t, props, "duration_seconds", "the demo server's submit_job schema")
			// Exactly the REST listing's schema.
			code, rest := get(t, e.m.URL()+"/api/threads/"+form.thread+"/tools", testUserToken)
			require.Equal(t, http.StatusOK, code)
			var restSchema any
			for _, raw := range rest["tools"].([]any) {
				if tool := raw.(map[string]any); tool["name"] == "demo_submit_job" {
					restSchema = tool["input_schema"]
				}
			}
			require.NotNil(t, restSchema)
			require.Equal(t, restSchema, byName["demo_submit_job"].InputSchema)

			// An ordinary call.
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "demo_add", Arguments: map[string]any{"a": 2, "b": 3}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Len(t, res.Content, 1)
			text, ok := res.Content[0].(*mcp.TextContent)
			require.True(t, ok, "content %T", res.Content[0])
			require.Equal(t, "5", text.Text)
			require.Equal(t, map[string]any{"sum": float64(5)}, res.StructuredContent)

			// A submit wrapper without task augmentation answers the REST
			// handle; the task then completes.
			res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "demo_submit_job", Arguments: map[string]any{"duration_seconds": 1}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
			handle, ok := res.StructuredContent.(map[string]any)
			require.True(t, ok, "structured content %T", res.StructuredContent)
			require.ElementsMatch(t, []string{"task_id", "task_name", "status", "message"}, keys(handle))
			require.Equal(t, "job", handle["task_name"])
			require.Equal(t, "Task is running in the background.", handle["message"])
			id, _ := handle["task_id"].(string)
			require.Regexp(t, `^mcp-task-[0-9a-f]{32}$`, id)
			var detail map[string]any
			require.Eventually(t, func() bool {
				_, detail = get(t, e.m.URL()+"/api/threads/"+form.thread+"/mcp-tasks/"+id, testUserToken)
				return detail["status"] == "completed"
			}, 90*time.Second, 100*time.Millisecond, "the task never completed: %v", detail)

			// An unknown tool is JSON-RPC error -32602.
			_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
			require.Error(t, err)
			var werr *jsonrpc.Error
			require.True(t, errors.As(err, &werr), "%T: %v", err, err)
			require.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)

			if modern {
				// Every request after discover was stateless: its revision
				// in the header, no session.
				for _, ex := range rt.exchanges()[1:] {
					require.Equal(t, "2026-07-28", ex.protocolHeader, "%+v", ex)
					require.Empty(t, ex.sessionHeader, "%+v", ex)
				}
				require.NoError(t, session.Close())
				closed = true
				return
			}

			// Close sends DELETE; the session is gone afterwards.
			require.NoError(t, session.Close())
			closed = true
			var deletes []exchange
			for _, ex := range rt.exchanges() {
				if ex.httpMethod == http.MethodDelete {
					deletes = append(deletes, ex)
				}
			}
			require.Len(t, deletes, 1)
			require.Equal(t, http.StatusNoContent, deletes[0].status)

			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
				strings.NewReader(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`))
			require.NoError(t, err)
			for k, v := range rt.headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		})
	}
}
