package session

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestUnknownSessionAnswers: the answers of servers that no longer know a
// session retire the shared session; a tool's own JSON-RPC errors do not.
func TestUnknownSessionAnswers(t *testing.T) {
	for _, msg := range []string{
		"Bad Request: No valid session ID provided", // TypeScript SDK examples (400, -32000)
		"Session not found",                         // TypeScript SDK transport (404, -32001)
		"Bad Request: Server not initialized",       // a restarted TypeScript SDK transport
		"Bad Request: Missing session ID",           // Python SDK
		`request failed with status 400: {"error":"invalid session id"}`,
	} {
		require.True(t, sessUnknownSession(msg), msg)
	}
	for _, msg := range []string{
		"the database is down",
		"internal error: tool failed",
		"request failed with status 500: upstream timeout",
		"tool 'session_open' failed",
	} {
		require.False(t, sessUnknownSession(msg), msg)
	}
	require.True(t, sessUnknownSessionAnswer(&mcp.JSONRPCErrorDetails{Code: -32000, Message: "Bad Request: No valid session ID provided"}))
	require.True(t, sessUnknownSessionAnswer(&mcp.JSONRPCErrorDetails{Code: -32001, Message: "Session not found"}))
	// The same words under a code the protocol gives the request's own
	// outcome are the task's or tool's answer, never the session's.
	require.False(t, sessUnknownSessionAnswer(&mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: "Session not found"}))
	require.False(t, sessUnknownSessionAnswer(&mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "session expired"}))
}
