package mcpserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A request of a revision mcpflow does not speak is told so, naming the
// version and the ones it speaks, with or without a session; not that it
// lacks a session it could never have.
func TestUnknownProtocolVersionIsNamed(t *testing.T) {
	t.Parallel()
	e := newLimitEnv(t, Options{}, 1, 1)
	session := e.initialize(t, alice)
	for _, sid := range []string{"", session} {
		r, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(HeaderProtocolVersion, "2024-01-01")
		if sid != "" {
			r.Header.Set(HeaderSessionID, sid)
		}
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		var out struct {
			ID    int `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Equal(t, 7, out.ID)
		require.Equal(t, -32600, out.Error.Code)
		require.Contains(t, out.Error.Message, "unsupported Mcp-Protocol-Version 2024-01-01")
		require.Contains(t, out.Error.Message, "2026-07-28")
		require.Contains(t, out.Error.Message, "2025-11-25")
		require.NotContains(t, out.Error.Message, "Mcp-Session-Id")
	}
}
