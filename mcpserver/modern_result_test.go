package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModernResultOfACall: a tool's result, stamped for 2026-07-28 without
// re-encoding, is what the general stamping makes of it: resultType
// complete, the server's identity in _meta beside the result's own keys.
func TestModernResultOfACall(t *testing.T) {
	s := New(Options{Version: "v-test"})
	defer s.Stop()
	for _, r := range []callToolResult{
		{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}},
		{Content: []json.RawMessage{}, StructuredContent: map[string]any{"a": 1.0}, IsError: true, Meta: map[string]any{"k": "v"}},
	} {
		fast, err := json.Marshal(s.modernResult(r))
		require.NoError(t, err)
		// The general path: the result as a value of another type.
		slow, err := json.Marshal(s.modernResult(struct{ callToolResult }{r}))
		require.NoError(t, err)
		require.JSONEq(t, string(slow), string(fast))
		var m map[string]any
		require.NoError(t, json.Unmarshal(fast, &m))
		require.Equal(t, "complete", m["resultType"])
		require.Equal(t, map[string]any{"name": serverName, "version": "v-test"}, m["_meta"].(map[string]any)[metaServerInfo])
		// As it is answered, byte for byte what json.Marshal writes.
		resp := newResponse(json.RawMessage(`1`), s.modernResult(r), nil)
		direct, err := encodeResponse(resp)
		require.NoError(t, err)
		marshalled, err := json.Marshal(resp)
		require.NoError(t, err)
		require.JSONEq(t, string(marshalled), string(direct))
	}
}
