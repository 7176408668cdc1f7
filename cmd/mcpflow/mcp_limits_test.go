package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestMCPEndpointPerUserLimits runs mcpflow dev with one wait slot, one
// GET stream slot and two sessions per user, and checks what a host sees
// over real HTTP: the least recently used session ends when a third is
// initialized, a second session's stream is 429 while the first one's
// reconnects freely, and a waiting tasks/result holds the wait slot that
// the REST events long poll shares (429 with Retry-After), while
// tasks/cancel is still sent and answered without waiting.
func TestMCPEndpointPerUserLimits(t *testing.T) {
	dir := t.TempDir()
	demo := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {"demo": {"type": "http", "url": %q, "tool_call_timeout": 30, %s}}}`, demo, jobToolset)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extensions_config.json"), []byte(ext), 0o600))
	body := mcpServiceConfig(testenv.FreeAddr(t), testenv.FreeAddr(t), fmt.Sprintf("e2e-limits-%d", time.Now().UnixNano()), "")
	body = strings.Replace(body, "max_concurrent_calls_per_user: 1,",
		"max_concurrent_calls_per_user: 1, max_waits_per_user: 1, max_mcp_streams_per_user: 1, max_mcp_sessions_per_user: 2,", 1)
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(body), 0o600))
	m := waitReady(t, startMain(t, ModeDev, cfg, nil))
	base := m.URL()
	const path = "/mcp/threads/lim"
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	// Sessions: the third initialize ends the least recently used one.
	s1 := initSession(t, base, path, testUserToken, nil)
	s2 := initSession(t, base, path, testUserToken, nil)
	s3 := initSession(t, base, path, testUserToken, nil)
	a := doRPC(t, base, "POST", rpc{path: path, token: testUserToken, session: s1, body: list})
	require.Equal(t, 404, a.status, a.raw)
	require.EqualValues(t, -32001, a.errorCode())
	for _, sid := range []string{s2, s3} {
		a = doRPC(t, base, "POST", rpc{path: path, token: testUserToken, session: sid, body: list})
		require.Equal(t, 200, a.status, a.raw)
	}
	bobs := initSession(t, base, "/mcp/threads/lim-bob", testBobToken, nil)
	a = doRPC(t, base, "POST", rpc{path: "/mcp/threads/lim-bob", token: testBobToken, session: bobs, body: list})
	require.Equal(t, 200, a.status, "another user's sessions are their own")

	// Streams: one per user here; s2 reconnecting replaces its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, first := openStream(t, ctx, base+path, s2, "")
	require.Equal(t, 200, resp.StatusCode)
	resp, _ = openStream(t, ctx, base+path, s3, "")
	require.Equal(t, 429, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	resp, _ = openStream(t, ctx, base+path, s2, "")
	require.Equal(t, 200, resp.StatusCode)
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-first:
		case <-timeout:
			t.Fatal("the replaced stream did not end")
		}
	}

	// Waits: a task through MCP, and tasks/result waiting on it.
	a = doRPC(t, base, "POST", rpc{path: path, token: testUserToken, session: s2,
		body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo_submit_job","arguments":{"duration_seconds":600},"task":{}}}`})
	require.Equal(t, 200, a.status, a.raw)
	task := a.result()["task"].(map[string]any)["taskId"].(string)
	result := `{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"` + task + `"}}`
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(result))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testUserToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s2)
	waiting, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer waiting.Body.Close()
	require.Equal(t, 200, waiting.StatusCode)
	require.Equal(t, "text/event-stream", waiting.Header.Get("Content-Type"), "tasks/result is waiting")

	a = doRPC(t, base, "POST", rpc{path: path, token: testUserToken, session: s3, body: result})
	require.Equal(t, 429, a.status, a.raw)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.EqualValues(t, -32002, a.errorCode())
	require.EqualValues(t, 4, a.body["id"])
	require.Contains(t, a.raw, "server.max_waits_per_user")
	code, out := get(t, base+"/api/threads/lim/events?wait=30", testUserToken)
	require.Equal(t, 429, code, "the REST long poll shares the wait slots: %v", out)

	// tasks/cancel without a wait slot: sent, and answered at once.
	a = doRPC(t, base, "POST", rpc{path: path, token: testUserToken, session: s3,
		body: `{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"` + task + `"}}`})
	require.Equal(t, 200, a.status, a.raw)
	require.Contains(t, []any{"working", "cancelled"}, a.result()["status"], a.raw)

	// The task ends cancelled: the waiting tasks/result answers, and its
	// slot is free again.
	b, err := io.ReadAll(waiting.Body)
	require.NoError(t, err)
	var answer map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"id":4`) {
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &answer))
		}
	}
	require.NotNil(t, answer, string(b))
	require.Equal(t, true, answer["result"].(map[string]any)["isError"], string(b))
	code, out = get(t, base+"/api/threads/lim/events?wait=0.1", testUserToken)
	require.Equal(t, 200, code, out)
}
