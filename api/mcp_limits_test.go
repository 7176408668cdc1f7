package api_test

import (
	"context"
	"encoding/json"
	"io"
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

// mcpDo sends a request to the MCP endpoint.
func mcpDo(ctx context.Context, t *testing.T, method, url, token, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// requireMCPTooMany checks a 429 of the MCP endpoint: Retry-After and a
// JSON-RPC error body naming the limit.
func requireMCPTooMany(t *testing.T, resp *http.Response, limit string) {
	t.Helper()
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var out struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, "2.0", out.JSONRPC)
	require.Equal(t, -32002, out.Error.Code)
	require.Contains(t, out.Error.Message, limit)
}

// The MCP endpoint's waits (tasks/result) and the REST events long poll
// take from one pool of each user's wait slots (server.max_waits_per_user),
// and the user's GET streams are capped apart
// (server.max_mcp_streams_per_user); another user is not affected.
func TestMCPWaitsShareTheLongPollSlots(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, store.BackendSQLite, filepath.Join(t.TempDir(), "m.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}}})
	require.NoError(t, err)
	events := &listedEvents{EventStore: db, reads: map[string]int{}, read: make(chan struct{}, 1)}
	quiet := slog.New(slog.DiscardHandler)
	mcp := mcpserver.New(mcpserver.Options{Tools: &blockingTools{}, Sessions: db, Events: db, Tasks: db, Logger: quiet,
		CancelTask: func(context.Context, *mcpflow.Task) error { return nil }})
	t.Cleanup(mcp.Stop)
	srv := api.New(api.Options{Auth: auth, Threads: db, Events: events, Tasks: db, MCP: mcp, Logger: quiet,
		MaxCallsPerUser: 5, MaxWaitsPerUser: 1, MaxStreamsPerUser: 1})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	initialize := func(token, thread string) string {
		resp := mcpDo(ctx, t, "POST", ts.URL+"/mcp/threads/"+thread, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		return resp.Header.Get("Mcp-Session-Id")
	}
	s1, s2 := initialize(aliceToken, "w1"), initialize(aliceToken, "w1")
	task := func(user, thread string) string {
		tk := &mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: user, ThreadID: thread, ServerName: "s", DriverName: mcpflow.DriverOrdinary,
			RemoteTaskID: mcpflow.NewTaskID(), TaskName: "job", Status: mcpflow.StatusWorking}
		require.NoError(t, db.CreateTask(ctx, tk))
		return tk.ID
	}
	working := task("alice", "w1")
	result := `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + working + `"}}`

	// A REST long poll holds alice's only wait slot: tasks/result is 429.
	poll := getAsync(ctx, ts.URL+"/api/threads/w1/events?wait=60", aliceToken)
	events.waitReads(t, "w1", 1)
	requireMCPTooMany(t, mcpDo(ctx, t, "POST", ts.URL+"/mcp/threads/w1", aliceToken, s1, result), "server.max_waits_per_user")

	// Bob waits on his own task meanwhile.
	bobWait := mcpDo(ctx, t, "POST", ts.URL+"/mcp/threads/wb", bobToken, initialize(bobToken, "wb"),
		`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+task("bob", "wb")+`"}}`)
	defer bobWait.Body.Close()
	require.Equal(t, "text/event-stream", bobWait.Header.Get("Content-Type"))

	// The poll answers and frees the slot: tasks/result waits, and now the
	// long poll is the one refused.
	_, err = db.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: "alice", ThreadID: "w1", TaskID: "other", EventVersion: 1, Status: mcpflow.StatusCompleted,
		Payload: json.RawMessage(`{"task_id":"other","task_name":"job","status":"completed"}`)})
	require.NoError(t, err)
	a := <-poll
	require.NoError(t, a.err)
	require.Equal(t, 200, a.status)
	waiting := mcpDo(ctx, t, "POST", ts.URL+"/mcp/threads/w1", aliceToken, s1, result)
	defer waiting.Body.Close()
	require.Equal(t, 200, waiting.StatusCode)
	require.Equal(t, "text/event-stream", waiting.Header.Get("Content-Type"), "tasks/result is waiting")
	a = <-getAsync(ctx, ts.URL+"/api/threads/w1/events?wait=60", aliceToken)
	require.NoError(t, a.err)
	require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.Contains(t, a.body["error"].(map[string]any)["message"], "server.max_waits_per_user")

	// GET streams: one per user here; the same session reconnecting
	// replaces its stream.
	stream := func(session string) *http.Response {
		return mcpDo(ctx, t, "GET", ts.URL+"/mcp/threads/w1", aliceToken, session, "")
	}
	first := stream(s1)
	defer first.Body.Close()
	require.Equal(t, 200, first.StatusCode)
	requireMCPTooMany(t, stream(s2), "server.max_mcp_streams_per_user")
	second := stream(s1)
	defer second.Body.Close()
	require.Equal(t, 200, second.StatusCode, "a reconnecting stream replaces the open one")
	_, err = io.Copy(io.Discard, first.Body)
	require.NoError(t, err, "the replaced stream ended cleanly")
}
