package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestToolListNamesUnavailableServers pins that the listing names the
// servers whose tools are missing and why, without secrets, and that a
// call of such a server's tool is 503 naming it, not 404.
func TestToolListNamesUnavailableServers(t *testing.T) {
	t.Parallel()
	ext := demoExt(t)
	ext["mcpServers"].(map[string]any)["down"] = map[string]any{
		"type": "http", "url": "http://" + testenv.FreeAddr(t) + "/mcp",
		"headers": map[string]any{"Authorization": "Bearer s3cret-value"},
	}
	b := setupTools(t, ext)
	status, body := b.do(t, "GET", "/api/threads/t1/tools", aliceToken, "")
	require.Equal(t, 200, status, "%v", body)
	require.Len(t, body["tools"], len(demomcp.ToolNames)-2, "the reachable server's tools")
	down, ok := body["unavailable_servers"].([]any)
	require.True(t, ok, "unavailable_servers: %v", body)
	require.Len(t, down, 1)
	entry := down[0].(map[string]any)
	require.Equal(t, "down", entry["server"])
	require.Contains(t, entry["reason"], "tool discovery failed")
	require.NotContains(t, entry["reason"], "s3cret")

	status, body = b.do(t, "POST", "/api/threads/t1/tools/down_echo/call", aliceToken, `{"arguments":{}}`)
	require.Equal(t, 503, status, "%v", body)
	require.Equal(t, "unavailable", errCode(t, body))
	require.Contains(t, body["error"].(map[string]any)["message"], "MCP server 'down' is unavailable")
}
