package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/stretchr/testify/require"
)

// startRelayEnv runs mcpflow in front of a 2026-07-28-only upstream (the
// TypeScript SDK v2 server, "modern") and a 2025-11-25 one over stdio (the
// reference server-everything, "ever").
func startRelayEnv(t *testing.T) *taskEnv {
	t.Helper()
	up := testenv.StartMCP2026Server(t)
	entry := testenv.EverythingEntry(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "modern": {"type": "http", "url": %q, "tool_call_timeout": 30},
  "ever": {"type": "stdio", "command": "node", "args": [%q, "stdio"], "tool_call_timeout": 30}
}}`, up, entry)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\nworkspace: { root: ws }\n", ext)
	return &taskEnv{m: waitReady(t, startMain(t, ModeDev, cfg, nil))}
}

// TestRelay2026Client: a 2026-07-28 client (TypeScript SDK v2) sees an
// upstream's progress notifications and answers its multi round-trip
// question through mcpflow, as if it called the server itself.
func TestRelay2026Client(t *testing.T) {
	testenv.Node2026(t)
	e := startRelayEnv(t)
	url := e.m.URL() + "/mcp/threads/relay-26"

	steps := testenv.RunMCP2026Client(t, url, testUserToken, "ordinary",
		`{"tool": "modern_progress", "arguments": {"steps": 3, "delayMs": 20}, "progressToken": "tok-1"}`)
	var progress []map[string]any
	for _, s := range steps {
		if s["step"] == "progress" {
			progress = append(progress, s)
		}
	}
	require.Len(t, progress, 3, "every notifications/progress of the server reaches the client: %v", steps)
	require.Contains(t, fmt.Sprint(progress[2]), "step 3 of 3", "%v", progress)
	require.Contains(t, fmt.Sprint(testenv.Step(steps, "result")), "done after 3 steps", "%v", steps)

	steps = testenv.RunMCP2026Client(t, url, testUserToken, "ordinary",
		`{"tool": "modern_mrtr_question", "arguments": {"question": "Colour?"}, "answer": {"answer": "teal"}}`)
	require.Contains(t, fmt.Sprint(testenv.Step(steps, "input_request")), "Colour?", "the server's question reached the client: %v", steps)
	require.Contains(t, fmt.Sprint(testenv.Step(steps, "result")), "answer: teal", "the client's answer reached the server: %v", steps)
}

// legacyClient connects mcp-go's client pinned to 2025-11-25, answering
// elicitations with content and recording progress notifications.
func legacyClient(t *testing.T, url string, content map[string]any) (*mcpclient.Client, *progressLog, *elicitLog) {
	t.Helper()
	return legacyClientAs(t, url, testUserToken, content)
}

// legacyClientAs is legacyClient signed in with token.
func legacyClientAs(t *testing.T, url, token string, content map[string]any) (*mcpclient.Client, *progressLog, *elicitLog) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	require.NoError(t, err)
	el := &elicitLog{content: content}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"), mcpclient.WithElicitationHandler(el))
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(context.Background()))
	pl := &progressLog{}
	c.OnNotification(pl.add)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25",
		ClientInfo: mcp.Implementation{Name: "mcpflow-relay-e2e", Version: "1"}}})
	require.NoError(t, err)
	require.Equal(t, "2025-11-25", init.ProtocolVersion)
	return c, pl, el
}

type progressLog struct {
	mu  sync.Mutex
	got []mcp.JSONRPCNotification
}

func (p *progressLog) add(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, n)
}

func (p *progressLog) of(token string) []mcp.JSONRPCNotification {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range p.got {
		if fmt.Sprint(n.Params.AdditionalFields["progressToken"]) == token {
			out = append(out, n)
		}
	}
	return out
}

type elicitLog struct {
	content map[string]any
	mu      sync.Mutex
	asked   []string
}

func (e *elicitLog) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params.Message)
	e.mu.Unlock()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: e.content}}, nil
}

func (e *elicitLog) questions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...)
}

func callWithProgress(t *testing.T, c *mcpclient.Client, tool, token string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if token != "" {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err, tool)
	require.False(t, res.IsError, "%s: %v", tool, res.Content)
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var out string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out += tc.Text
		}
	}
	return out
}

// TestRelay2025Client: a 2025-11-25 client (mcp-go) sees the progress of a
// 2026-07-28 upstream and of a 2025-11-25 stdio upstream, and answers an
// ordinary call's question of each: the 2026 server's input_required
// answer and the 2025 server's elicitation/create are both asked on the
// client's call stream, and its answers reach the servers.
func TestRelay2025Client(t *testing.T) {
	testenv.Node2026(t)
	e := startRelayEnv(t)
	c, progress, asked := legacyClient(t, e.m.URL()+"/mcp/threads/relay-25", map[string]any{"answer": "amber", "name": "Ada", "check": true})

	res := callWithProgress(t, c, "modern_progress", "p-modern", map[string]any{"steps": 2, "delayMs": 20})
	require.Contains(t, resultText(res), "done after 2 steps")
	require.Len(t, progress.of("p-modern"), 2, "the 2026 server's progress reached the client")

	res = callWithProgress(t, c, "ever_trigger-long-running-operation", "p-ever", map[string]any{"duration": 1, "steps": 2})
	require.NotEmpty(t, resultText(res))
	require.Len(t, progress.of("p-ever"), 2, "the stdio server's progress reached the client")

	res = callWithProgress(t, c, "modern_mrtr_question", "", map[string]any{"question": "Which colour?"})
	require.Contains(t, resultText(res), "answer: amber", "the client's answer reached the 2026 server")
	require.Contains(t, asked.questions(), "Which colour?")

	res = callWithProgress(t, c, "ever_trigger-elicitation-request", "", map[string]any{})
	require.Contains(t, resultText(res), "Ada", "the client's answer reached the stdio server")
	require.Len(t, asked.questions(), 2, "%v", asked.questions())
}
