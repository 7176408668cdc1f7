package api_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// illegalHeaderValues are literal header values the admin API refuses
// (spec §3.5), each with the reason it names; every one carries "LEAK" so
// the test can tell an echo of the value.
var illegalHeaderValues = []struct{ value, reason string }{
	{"Bearer LEAK\r\nX-Injected: 1", "contains a line break or another forbidden control character"},
	{"LEAK\n", "contains a line break or another forbidden control character"},
	{"LEAK\r", "contains a line break or another forbidden control character"},
	{"LE\x00AK", "contains a line break or another forbidden control character"},
	{"LE\vAK", "contains a line break or another forbidden control character"},
	{"LE\fAK", "contains a line break or another forbidden control character"},
	{"LEAK café", "contains characters outside ASCII"},
	{" LEAK", "has leading or trailing whitespace"},
	{"LEAK\t", "has leading or trailing whitespace"},
}

func serversBody(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"mcp_servers": servers})
	require.NoError(t, err)
	return string(b)
}

// requireHeaderRefused checks a 400 that names the server and the header
// and never the value, and that the file was not written.
func (b *configBundle) requireHeaderRefused(t *testing.T, status int, out map[string]any, before []byte, server, header, reason string) {
	t.Helper()
	require.Equal(t, 400, status, out)
	e := out["error"].(map[string]any)
	require.Equal(t, "invalid_argument", e["code"])
	msg := e["message"].(string)
	require.Equal(t, "Invalid MCP configuration: MCP server '"+server+"' header '"+header+"' "+reason, msg)
	require.NotContains(t, msg, "LEAK")
	require.NotContains(t, msg, "X-Injected")
	require.Equal(t, string(before), string(b.file(t)), "nothing was written")
	require.NotContains(t, b.audit.String(), "LEAK")
}

// PUT, POST and PATCH (enabling) refuse a literal header value that is
// illegal with 400, naming the server and the header, never the value; a
// $VAR placeholder is resolved and checked only when the server connects.
func TestConfigRefusesIllegalLiteralHeaderValues(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, "")
	before := b.file(t)
	for _, c := range illegalHeaderValues {
		server := map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp",
			"headers": map[string]any{"X-Ok": "Bearer fine", "X-Api-Key": c.value}}

		status, out := b.do(t, "PUT", "/api/mcp/config", adminToken, serversBody(t, map[string]any{"web": server}))
		b.requireHeaderRefused(t, status, out, before, "web", "X-Api-Key", c.reason)

		status, out = b.do(t, "POST", "/api/mcp/config/servers", adminToken, serversBody(t, map[string]any{"web": server}))
		b.requireHeaderRefused(t, status, out, before, "web", "X-Api-Key", c.reason)

		disabled := map[string]any{"type": "sse", "url": "http://127.0.0.1:9/sse", "enabled": false, "headers": map[string]any{"Authorization": c.value}}
		status, out = b.do(t, "POST", "/api/mcp/config/servers", adminToken, serversBody(t, map[string]any{"off": disabled}))
		b.requireHeaderRefused(t, status, out, before, "off", "Authorization", c.reason)
	}

	// Legal values, and placeholders whatever they resolve to, are written.
	status, out := b.do(t, "POST", "/api/mcp/config/servers", adminToken, serversBody(t, map[string]any{
		"web": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp",
			"headers": map[string]any{"Authorization": "Bearer a\tb c", "X-Empty": "", "X-Del": "a\x7fb", "X-Env": "$MCP_HEADER_UNSET"}},
	}))
	require.Equal(t, 201, status, out)
	require.Contains(t, string(b.file(t)), `"X-Env": "$MCP_HEADER_UNSET"`)
}

// A server whose illegal header value was written to the file by hand is
// refused when the API enables it (disabling always works), and when a PUT
// keeps the value through "***".
func TestConfigRefusesEnablingAServerWithAnIllegalHeader(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, "")
	doc := `{"mcpServers": {
  "bad": {"type": "http", "url": "http://127.0.0.1:9/mcp", "enabled": false, "headers": {"Authorization": "Bearer LEAK\r\nX-Injected: 1"}}
}}`
	require.NoError(t, os.WriteFile(b.path, []byte(doc), 0o600))
	before := b.file(t)

	status, out := b.do(t, "PATCH", "/api/mcp/config", adminToken, `{"server_name": "bad", "enabled": true}`)
	b.requireHeaderRefused(t, status, out, before, "bad", "Authorization", "contains a line break or another forbidden control character")

	status, out = b.do(t, "PUT", "/api/mcp/config", adminToken, `{"mcp_servers": {"bad": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "***"}}}}`)
	b.requireHeaderRefused(t, status, out, before, "bad", "Authorization", "contains a line break or another forbidden control character")

	status, out = b.do(t, "PATCH", "/api/mcp/config", adminToken, `{"server_name": "bad", "enabled": false}`)
	require.Equal(t, 200, status, out)
	require.NotContains(t, strings.ToUpper(b.audit.String()), "LEAK")

	// A real value replaces it.
	status, out = b.do(t, "PUT", "/api/mcp/config", adminToken, `{"mcp_servers": {"bad": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer new"}}}}`)
	require.Equal(t, 200, status, out)
}
