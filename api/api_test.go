package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
	"github.com/stretchr/testify/require"
)

const (
	adminToken = "admin-secret-token-1"
	aliceToken = "alice-secret-token-2"
	bobToken   = "bob-secret-token-3"
)

type testBundle struct {
	srv     *api.Server
	logs    *testenv.SyncBuffer
	db      *store.DB
	deleted chan *mcpflow.Thread // ThreadDeleted calls
}

func setup(t *testing.T, checks ...api.Check) *testBundle {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "api.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	bobDigest := sha256.Sum256([]byte(bobToken))
	auth, err := api.NewAuthenticator(api.AuthConfig{
		AdminTokens: []string{adminToken},
		Users: []api.UserToken{
			{UserID: "alice", Token: aliceToken},
			{UserID: "bob", TokenSHA256: hex.EncodeToString(bobDigest[:])},
		},
	})
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	deleted := make(chan *mcpflow.Thread, 10)
	srv := api.New(api.Options{
		Auth: auth, Threads: db, Events: db, Readiness: checks,
		ThreadDeleted:   func(_ context.Context, t *mcpflow.Thread) { deleted <- t },
		MCPTasksEnabled: func() bool { return true },
		Logger:          slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	srv.Admin().GET("/test-admin", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"ok": true}) })
	return &testBundle{srv: srv, logs: logs, db: db, deleted: deleted}
}

func (b *testBundle) do(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	return serveJSON(t, b.srv.Handler(), method, path, token, body)
}

// serveJSON sends one request (a JSON body when body is not empty, a bearer
// token when token is not) and decodes the JSON answer.
func serveJSON(t *testing.T, h http.Handler, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var out map[string]any
	if w.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out), w.Body.String())
	}
	return w.Code, out
}

func errCode(t *testing.T, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "error body: %v", body)
	require.NotEmpty(t, e["message"])
	return e["code"].(string)
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"missing token", "POST", "/api/threads", "", 401, "unauthenticated"},
		{"unknown token", "POST", "/api/threads", "nope", 401, "unauthenticated"},
		{"admin token on user route", "POST", "/api/threads", adminToken, 403, "forbidden"},
		{"user on admin route", "GET", "/api/test-admin", aliceToken, 403, "forbidden"},
		{"missing token on admin route", "GET", "/api/test-admin", "", 401, "unauthenticated"},
		{"admin on admin route", "GET", "/api/test-admin", adminToken, 200, ""},
		{"plain user token", "POST", "/api/threads", aliceToken, 201, ""},
		{"sha256 user token", "POST", "/api/threads", bobToken, 201, ""},
	}
	for _, tc := range cases {
		status, body := b.do(t, tc.method, tc.path, tc.token, "")
		require.Equal(t, tc.status, status, tc.name)
		if tc.code != "" {
			require.Equal(t, tc.code, errCode(t, body), tc.name)
		}
	}
	for _, tok := range []string{adminToken, aliceToken, bobToken, "nope"} {
		require.NotContains(t, b.logs.String(), tok, "a token reached the log")
	}
	require.Contains(t, b.logs.String(), "user_id=alice")
}

func TestAuthenticatorRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []api.AuthConfig{
		{AdminTokens: []string{""}},
		{AdminTokenSHA256: []string{"abc"}},
		{Users: []api.UserToken{{UserID: "a", Token: "x", TokenSHA256: strings.Repeat("a", 64)}}},
		{Users: []api.UserToken{{UserID: "a"}}},
		{Users: []api.UserToken{{UserID: "../x", Token: "t"}}},
	} {
		_, err := api.NewAuthenticator(cfg)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "x\"")
	}
}

func TestThreads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"t-1"}`)
	require.Equal(t, 201, status)
	require.Equal(t, "t-1", body["thread_id"])
	require.NotEmpty(t, body["created_at"])

	status, _ = b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"t-1"}`)
	require.Equal(t, 200, status, "creating an owned thread again is idempotent")

	status, body = b.do(t, "GET", "/api/threads/t-1", aliceToken, "")
	require.Equal(t, 200, status)
	require.Equal(t, "t-1", body["thread_id"])

	// Thread ids are per user: bob cannot tell alice's t-1 from an id
	// nobody uses. Every route answers him exactly as for a free id, and
	// t-1 is his to create.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/threads/%s", ""},
		{"DELETE", "/api/threads/%s", ""},
		{"GET", "/api/threads/%s/mcp-tasks", ""},
		{"GET", "/api/threads/%s/events", ""},
	} {
		taken, takenBody := b.do(t, r.method, fmt.Sprintf(r.path, "t-1"), bobToken, r.body)
		free, freeBody := b.do(t, r.method, fmt.Sprintf(r.path, "t-free"), bobToken, r.body)
		require.Equal(t, free, taken, "%s %s", r.method, r.path)
		require.Equal(t, 404, taken, "%s %s", r.method, r.path)
		require.Equal(t, freeBody, takenBody, "%s %s", r.method, r.path)
	}
	status, body = b.do(t, "POST", "/api/threads", bobToken, `{"thread_id":"t-1"}`)
	require.Equal(t, 201, status, "alice's id is free for bob: %v", body)
	require.Equal(t, "t-1", body["thread_id"])
	status, _ = b.do(t, "POST", "/api/threads", bobToken, `{"thread_id":"t-free"}`)
	require.Equal(t, 201, status)
	status, _ = b.do(t, "DELETE", "/api/threads/t-1", bobToken, "")
	require.Equal(t, 204, status, "bob deletes his own t-1...")
	status, _ = b.do(t, "GET", "/api/threads/t-1", aliceToken, "")
	require.Equal(t, 200, status, "...and alice's lives on")

	status, _ = b.do(t, "DELETE", "/api/threads/t-1", aliceToken, "")
	require.Equal(t, 204, status)
	status, body = b.do(t, "GET", "/api/threads/t-1", aliceToken, "")
	require.Equal(t, 410, status)
	require.Equal(t, "gone", errCode(t, body))
	status, _ = b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"t-1"}`)
	require.Equal(t, 410, status, "a deleted id is never resurrected")

	status, _ = b.do(t, "GET", "/api/threads/missing", aliceToken, "")
	require.Equal(t, 404, status)

	status, body = b.do(t, "POST", "/api/threads", aliceToken, `{}`)
	require.Equal(t, 201, status)
	require.Len(t, body["thread_id"], 36, "a UUID is generated")
	status, _ = b.do(t, "POST", "/api/threads", aliceToken, "")
	require.Equal(t, 201, status, "an empty body is fine")
}

func TestThreadIDValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"..", ".", "a/b", "a\\u0000b", strings.Repeat("x", 65), ".hidden", "", "-x"} {
		status, body := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"`+id+`"}`)
		require.Equal(t, 400, status, id)
		require.Equal(t, "invalid_argument", errCode(t, body))
	}
	status, _ := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":`)
	require.Equal(t, 400, status, "malformed JSON")
	status, _ = b.do(t, "GET", "/api/threads/"+strings.Repeat("x", 65), aliceToken, "")
	require.Equal(t, 400, status)
}

func TestHealthReadinessFeatures(t *testing.T) {
	t.Parallel()
	ok := api.Check{Name: "database", Check: func(context.Context) error { return nil }}
	b := setup(t, ok)
	status, body := b.do(t, "GET", "/healthz", "", "")
	require.Equal(t, 200, status)
	require.Equal(t, "ok", body["status"])
	status, body = b.do(t, "GET", "/readyz", "", "")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"database": "ok"}, body["checks"])
	status, body = b.do(t, "GET", "/api/features", "", "")
	require.Equal(t, 200, status)
	require.Equal(t, map[string]any{"mcp_tasks": map[string]any{"enabled": true}}, body)

	bad := api.Check{Name: "temporal", Check: func(context.Context) error { return errors.New("dial tcp: refused") }}
	b = setup(t, ok, bad)
	status, body = b.do(t, "GET", "/readyz", "", "")
	require.Equal(t, 503, status)
	require.Equal(t, map[string]any{"database": "ok", "temporal": "unavailable"}, body["checks"])
	require.NotContains(t, body, "refused", "internals stay in the log")

	// HEAD answers as GET does, without a body.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
		w := httptest.NewRecorder()
		b.srv.Handler().ServeHTTP(w, httptest.NewRequest("HEAD", path, nil))
		require.Equal(t, want, w.Code, "HEAD %s", path)
	}
}

func TestUnknownRouteAndRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, "GET", "/api/nope", aliceToken, "")
	require.Equal(t, 404, status)
	require.Equal(t, "not_found", errCode(t, body))

	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-ID", "req-123")
	w := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(w, req)
	require.Equal(t, "req-123", w.Header().Get("X-Request-ID"))
	req = httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-ID", "bad id\nwith newline")
	w = httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(w, req)
	require.Len(t, w.Header().Get("X-Request-ID"), 16, "an invalid request id is replaced")
}
