package config

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// A literal static header value that fails the §3.5 rule is refused by
// every admin write that would store it (PUT, POST, enabling PATCH), with
// EInvalid naming the server and the header and never the value; the file
// stays as it was.
func TestAdminRefusesIllegalLiteralHeaderValues(t *testing.T) {
	t.Parallel()
	for value, reason := range map[string]error{
		"Bearer V4LUE\r\nX-Injected: 1": ErrHeaderControl,
		"V4LUE\x00":                     ErrHeaderControl,
		"V4\vLUE":                       ErrHeaderControl,
		"V4LUE ü":                       ErrHeaderNonASCII,
		"V4LUE ":                        ErrHeaderWhitespace,
		"\tV4LUE":                       ErrHeaderWhitespace,
	} {
		a, path := newAdmin(t, storedDoc)
		before, err := os.ReadFile(path)
		require.NoError(t, err)
		want := "Invalid MCP configuration: MCP server 'api' header 'X-Key' " + reason.Error()
		server := map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": map[string]any{"X-Key": value}}
		check := func(what string, err error) {
			t.Helper()
			require.Error(t, err, what)
			require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err), what)
			require.Equal(t, want, mcpflow.ErrorMessage(err), what)
			require.NotContains(t, err.Error(), "V4LUE", what)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, string(before), string(after), "%s: the file is untouched", what)
		}
		check("put", put(t, a, map[string]any{"api": server}))
		body, err := json.Marshal(map[string]any{"mcp_servers": map[string]any{"api": server}})
		require.NoError(t, err)
		_, err = a.AddMCPServers(context.Background(), "test", body)
		check("add", err)
		server["enabled"] = false
		check("put disabled", put(t, a, map[string]any{"api": server}))
	}
}

// Enabling a server whose header was made illegal by hand is refused;
// disabling it is not, and a "***" that would keep the stored value is
// refused like the value itself.
func TestAdminChecksStoredHeaderValuesItWouldKeep(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, `{"mcpServers": {"api": {"type": "sse", "url": "http://127.0.0.1:9/sse", "enabled": false,
		"headers": {"Authorization": "Bearer V4LUE\nX-Injected: 1", "X-Line\nBreak": "ok"}}}}`)
	_, err := a.SetMCPServerEnabled(context.Background(), "test", "api", true)
	require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
	require.Equal(t, "Invalid MCP configuration: MCP server 'api' header 'Authorization' contains a line break or another forbidden control character", mcpflow.ErrorMessage(err))
	_, err = a.SetMCPServerEnabled(context.Background(), "test", "api", false)
	require.NoError(t, err)
	err = put(t, a, map[string]any{"api": map[string]any{"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": map[string]any{"Authorization": "***"}}})
	require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
	require.NotContains(t, err.Error(), "V4LUE")
	require.Equal(t, false, storedServer(t, path, "api")["enabled"])
}

// A $VAR placeholder is not checked at write time, whatever it resolves
// to: the value is checked when the server connects, where the server is
// skipped with a reason that names the header and not the value.
func TestAdminLeavesPlaceholdersToTheConnectionCheck(t *testing.T) {
	t.Parallel()
	a, path := newAdmin(t, storedDoc)
	a.Env = mapEnv(map[string]string{"BAD_TOKEN": "Bearer V4LUE\r\nX-Injected: 1"})
	require.NoError(t, put(t, a, map[string]any{"api": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp",
		"headers": map[string]any{"Authorization": "$BAD_TOKEN", "X-Legal": "two  words\tand DEL \x7f"}}}))
	require.Equal(t, map[string]any{"Authorization": "$BAD_TOKEN", "X-Legal": "two  words\tand DEL \x7f"}, storedServer(t, path, "api")["headers"])

	ext, err := LoadExtensions(path, a.Env)
	require.NoError(t, err)
	var problem error
	for _, s := range ext.Servers {
		if s.Name == "api" {
			problem = s.ConnectionProblem()
		}
	}
	require.True(t, errors.Is(problem, ErrHeaderControl), "%v", problem)
	require.Equal(t, "MCP server 'api' header 'Authorization' contains a line break or another forbidden control character", problem.Error())
}
