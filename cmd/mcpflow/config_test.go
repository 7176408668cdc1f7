package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func adminCall(t *testing.T, e *taskEnv, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.m.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, out
}

// Task servers are frozen at start-up (spec §4.6): a presentation edit stays
// hot, a runtime edit makes the server's tools fail with the restart error,
// and an unrelated server keeps working. Writes go through the admin API,
// which resets this process's tool cache.
func TestTaskServerDriftThroughTheAdminAPI(t *testing.T) {
	url := demoHTTP(t)
	other := demoHTTP(t)
	ext := fmt.Sprintf(`{"mcpServers": {
  "demo": {"type": "http", "url": %q, "tool_call_timeout": 10, %s},
  "other": {"type": "http", "url": %q}
}}`, url, jobToolset, other)
	cfg := writeConfig(t, "mcp_tasks: { enabled: true, poll_interval_seconds: 1 }\n", ext)
	e := startNotifyMain(t, cfg)

	code, view := adminCall(t, e, "GET", "/api/mcp/config", "")
	require.Equal(t, 200, code, view)
	servers := view["mcp_servers"].(map[string]any)

	// A presentation-only edit is hot.
	servers["demo"].(map[string]any)["description"] = "Jobs, renamed"
	body, err := json.Marshal(map[string]any{"mcp_servers": servers})
	require.NoError(t, err)
	code, out := adminCall(t, e, "PUT", "/api/mcp/config", string(body))
	require.Equal(t, 200, code, out)
	id := e.submit(t, "d1", "demo_submit_job", `{"duration_seconds": 0.5}`)
	e.waitStatus(t, "d1", id, "completed")

	// A runtime edit (the URL) is not.
	servers["demo"].(map[string]any)["url"] = other
	body, err = json.Marshal(map[string]any{"mcp_servers": servers})
	require.NoError(t, err)
	code, out = adminCall(t, e, "PUT", "/api/mcp/config", string(body))
	require.Equal(t, 200, code, out)
	for _, tool := range []string{"demo_submit_job", "demo_echo"} {
		code, out = e.post(t, "/api/threads/d1/tools/"+tool+"/call", `{"arguments": {"message": "x"}}`)
		require.Equal(t, 503, code, "%s: %v", tool, out)
		require.Equal(t, "MCP task-enabled server configuration changed after mcpflow startup (demo); restart mcpflow before using durable task tools",
			out["error"].(map[string]any)["message"])
	}
	code, out = e.post(t, "/api/threads/d1/tools/other_echo/call", `{"arguments": {"message": "still here"}}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, false, out["is_error"])
}
