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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/store"
)

// blockingTools holds every call until release is closed.
type blockingTools struct {
	entered chan string
	release chan struct{}
}

func (b *blockingTools) ListTools(context.Context, string, string) ([]mcpflow.Tool, error) {
	return nil, nil
}
func (b *blockingTools) CallTool(ctx context.Context, c mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	b.entered <- c.UserID
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return &mcpflow.ToolResult{}, nil
}
func (b *blockingTools) UnavailableServers(context.Context, string) ([]mcpflow.UnavailableServer, error) {
	return nil, nil
}
func (b *blockingTools) RoutingHints([]mcpflow.Tool) string { return "" }
func (b *blockingTools) ResetCache()                        {}

func limitServer(t *testing.T, tools mcpflow.ToolRuntime) *httptest.Server {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "l.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}, {UserID: "bob", Token: bobToken}}})
	require.NoError(t, err)
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: tools, MaxBodyBytes: 2048, MaxCallsPerUser: 2,
		Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url, token string, body io.Reader) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func TestBodyCap(t *testing.T) {
	t.Parallel()
	ts := limitServer(t, &blockingTools{entered: make(chan string, 10), release: closed()})
	big := `{"arguments": {"x": "` + strings.Repeat("a", 3000) + `"}}`
	resp, out := post(t, ts.URL+"/api/threads/t1/tools/x/call", aliceToken, strings.NewReader(big))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Equal(t, "payload_too_large", out["error"].(map[string]any)["code"])
	// Without a Content-Length (chunked) the read hits the cap.
	resp, out = post(t, ts.URL+"/api/threads", aliceToken, io.MultiReader(strings.NewReader(big)))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%v", out)
	resp, _ = post(t, ts.URL+"/api/threads/t1/tools/x/call", aliceToken, strings.NewReader(`{"arguments": {}}`))
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func TestConcurrentCallsPerUser(t *testing.T) {
	t.Parallel()
	tools := &blockingTools{entered: make(chan string, 10), release: make(chan struct{})}
	ts := limitServer(t, tools)
	url := ts.URL + "/api/threads/t1/tools/x/call"
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Go(func() {
			resp, _ := post(t, url, aliceToken, strings.NewReader(`{}`))
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
	for i := 0; i < 2; i++ {
		select {
		case <-tools.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the first two calls did not start")
		}
	}
	resp, out := post(t, url, aliceToken, strings.NewReader(`{}`))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v", out)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, "too_many_requests", out["error"].(map[string]any)["code"])

	// Another user is not affected.
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, ts.URL+"/api/threads/tb/tools/x/call", bobToken, strings.NewReader(`{}`))
		done <- resp.StatusCode
	}()
	require.Equal(t, "bob", <-tools.entered)
	close(tools.release)
	require.Equal(t, http.StatusOK, <-done)
	wg.Wait()
	resp, _ = post(t, url, aliceToken, strings.NewReader(`{}`))
	require.Equal(t, http.StatusOK, resp.StatusCode, "slots are released")
}
