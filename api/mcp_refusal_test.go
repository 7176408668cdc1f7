package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

// Every refusal of the MCP endpoint is a JSON-RPC error an MCP SDK can
// show, also the ones the API answers before the MCP server reads the
// message (a deleted thread, a body too large, no token, an
// unknown path or method); the REST routes keep their error shape.
func TestMCPRefusalsAreJSONRPCErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "m.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}}})
	require.NoError(t, err)
	quiet := slog.New(slog.DiscardHandler)
	mcp := mcpserver.New(mcpserver.Options{Tools: &blockingTools{}, Sessions: db, Events: db, Tasks: db, Logger: quiet,
		CancelTask: func(context.Context, *mcpflow.Task) error { return nil }})
	t.Cleanup(mcp.Stop)
	srv := api.New(api.Options{Auth: auth, Threads: db, Tasks: db, MCP: mcp, Logger: quiet, MaxBodyBytes: 4096})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	code, _ := serveJSON(t, srv.Handler(), http.MethodPost, "/api/threads", aliceToken, `{"thread_id":"gone"}`)
	require.Equal(t, http.StatusCreated, code)
	code, _ = serveJSON(t, srv.Handler(), http.MethodDelete, "/api/threads/gone", aliceToken, "")
	require.Equal(t, http.StatusNoContent, code)

	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
		rpc                             int
		message                         string
	}{
		{"deleted thread", "POST", "/mcp/threads/gone", aliceToken, discover, 410, "gone", -32600, "thread was deleted"},
		{"deleted thread by header", "POST", "/mcp", aliceToken, discover, 410, "gone", -32600, "thread was deleted"},
		{"body too large", "POST", "/mcp", aliceToken, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 5000) + `"}}`, 413, "payload_too_large", -32600, "larger than 4096 bytes"},
		{"no token", "POST", "/mcp", "", discover, 401, "unauthenticated", -32600, ""},
		{"unknown path", "POST", "/mcp/threads/a/b", aliceToken, discover, 404, "not_found", -32600, "no such route"},
		{"unknown method", "PUT", "/mcp", aliceToken, discover, 405, "method_not_allowed", -32600, "method not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.path == "/mcp" {
				req.Header.Set(api.HeaderThreadID, "gone")
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
			var out struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      *json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Code string `json:"code"`
					} `json:"data"`
				} `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			require.Equal(t, "2.0", out.JSONRPC)
			require.Nil(t, out.ID, "the id is null: the message was not read")
			require.Equal(t, tc.rpc, out.Error.Code)
			require.Equal(t, tc.code, out.Error.Data.Code)
			require.Contains(t, out.Error.Message, tc.message)
			if tc.status == http.StatusUnauthorized {
				require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}

	// REST keeps its shape.
	code, body := serveJSON(t, srv.Handler(), http.MethodGet, "/api/threads/gone", aliceToken, "")
	require.Equal(t, http.StatusGone, code)
	require.Equal(t, "gone", errCode(t, body))
}
