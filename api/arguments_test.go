package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// A REST tool call sends its arguments to the MCP server as the agent wrote
// them: integers beyond 2^53 and long decimals keep every digit (the demo
// server records the arguments text it received).
func TestCallToolSendsNumbersExactly(t *testing.T) {
	t.Parallel()
	b := setupTools(t, map[string]any{"mcpServers": map[string]any{"demo": map[string]any{
		"type": "stdio", "command": testenv.Binary(t, "./internal/testsupport/demomcp/cmd/demo-mcp"), "args": []string{"--transport", "stdio", "--record-calls"},
	}}})
	status, body := b.do(t, "POST", "/api/threads/big-1/tools/demo_echo/call", aliceToken,
		`{"arguments": {"message": "m", "big": 9007199254740993, "nested": {"list": [-9007199254740993, 0.10000000000000000555, 1E+2]}}}`)
	require.Equal(t, 200, status, body)
	require.Equal(t, false, body["is_error"], body)

	status, body = b.do(t, "POST", "/api/threads/big-1/tools/demo_headers/call", aliceToken, `{"arguments": {"history": true}}`)
	require.Equal(t, 200, status, body)
	hist := body["structured_content"].(map[string]any)["history"].([]any)
	require.NotEmpty(t, hist)
	first := hist[0].(map[string]any)
	require.Equal(t, "echo", first["tool"])
	dec := json.NewDecoder(strings.NewReader(first["arguments"].(string)))
	dec.UseNumber()
	var got map[string]any
	require.NoError(t, dec.Decode(&got))
	require.Equal(t, json.Number("9007199254740993"), got["big"])
	require.Equal(t, []any{json.Number("-9007199254740993"), json.Number("0.10000000000000000555"), json.Number("1E+2")},
		got["nested"].(map[string]any)["list"], "numbers are sent as written")

	// Arguments that are not one JSON object are still refused.
	for _, args := range []string{`[9007199254740993]`, `9007199254740993`, `"x"`} {
		status, body = b.do(t, "POST", "/api/threads/big-1/tools/demo_echo/call", aliceToken, `{"arguments": `+args+`}`)
		require.Equal(t, 400, status, args)
		require.Equal(t, "invalid_argument", errCode(t, body), args)
	}
}
