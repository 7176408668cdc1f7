package demomcp

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/stretchr/testify/require"
)

// With RecordCalls, the history keeps each call's arguments as the JSON
// text that arrived: an integer beyond 2^53 keeps every digit, also through
// the headers tool's structured answer.
func TestRecordedCallsKeepRawArguments(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{Workdir: t.TempDir(), RecordCalls: true})
	require.NoError(t, err)
	c, err := client.NewStreamableHttpClient(serveHTTP(t, srv, TransportHTTP) + StreamableHTTPPath)
	require.NoError(t, err)
	c = initClient(t, c, "")

	res := callTool(t, c, ToolEcho, map[string]any{"message": "hi", "big": json.Number("9007199254740993")})
	require.False(t, res.IsError)
	calls := srv.RecordedCalls()
	require.Len(t, calls, 1)
	require.Equal(t, ToolEcho, calls[0].Tool)
	require.JSONEq(t, `{"message": "hi", "big": 9007199254740993}`, calls[0].Arguments)
	require.Contains(t, calls[0].Arguments, "9007199254740993")

	hist := callStructured(t, c, ToolHeaders, map[string]any{"history": true})["history"].([]any)
	require.Len(t, hist, 2)
	require.Contains(t, hist[0].(map[string]any)["arguments"], "9007199254740993", "the text survives a JSON round trip")

	// An in-process call has no wire bytes: its arguments are encoded.
	inproc, err := client.NewInProcessClient(srv.MCPServer())
	require.NoError(t, err)
	inproc = initClient(t, inproc, "")
	callTool(t, inproc, ToolEcho, map[string]any{"message": "in"})
	calls = srv.RecordedCalls()
	require.JSONEq(t, `{"message": "in"}`, calls[len(calls)-1].Arguments)
}
