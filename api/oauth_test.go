package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

// refuseAll is a verifier that knows no token.
type refuseAll struct{}

func (refuseAll) VerifyAccessToken(context.Context, string, []string) (mcpflow.TokenIdentity, error) {
	return mcpflow.TokenIdentity{}, fmt.Errorf("%w: signature", mcpflow.ErrInvalidToken)
}

// tableVerifier answers from a table of tokens and records the resources
// each check was asked for. The real verifier (package oidcauth) and the
// whole flow against a real identity provider are tested in cmd/mcpflow.
type tableVerifier struct {
	mu        sync.Mutex
	ids       map[string]mcpflow.TokenIdentity
	down      bool
	resources [][]string
}

func (v *tableVerifier) VerifyAccessToken(_ context.Context, tok string, resources []string) (mcpflow.TokenIdentity, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.resources = append(v.resources, resources)
	if v.down {
		return mcpflow.TokenIdentity{}, fmt.Errorf("%w: provider idp: keys cannot be fetched", mcpflow.ErrTokenProviderUnavailable)
	}
	id, ok := v.ids[tok]
	if !ok {
		return mcpflow.TokenIdentity{}, fmt.Errorf("%w: audience", mcpflow.ErrInvalidToken)
	}
	return id, nil
}

func (v *tableVerifier) lastResources() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.resources[len(v.resources)-1]
}

// ctxTools records the caller token each call's context carries.
type ctxTools struct {
	blockingTools
	mu     sync.Mutex
	tokens []string
}

func (c *ctxTools) CallTool(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	c.mu.Lock()
	c.tokens = append(c.tokens, mcpflow.CallerToken(ctx))
	c.mu.Unlock()
	return &mcpflow.ToolResult{}, nil
}

const public = "https://mcpflow.example.com"

func oauthServer(t *testing.T, v mcpflow.TokenVerifier, tools mcpflow.ToolRuntime) (*api.Server, *testenv.SyncBuffer) {
	t.Helper()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(t.TempDir(), "o.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	auth, err := api.NewAuthenticator(api.AuthConfig{AdminTokens: []string{adminToken}, Users: []api.UserToken{{UserID: "alice", Token: aliceToken}}})
	require.NoError(t, err)
	logs := &testenv.SyncBuffer{}
	var oauth *api.OAuthResource
	if v != nil {
		oauth = &api.OAuthResource{Verifier: v, PublicURL: public,
			AuthorizationServers: []string{"https://idp.example.com/realms/a"}, Scopes: []string{"mcp:tools"}}
	}
	srv := api.New(api.Options{Auth: auth, OAuth: oauth, Threads: db, Tools: tools,
		MCP:    mcpserver.New(mcpserver.Options{Tools: tools, Sessions: db, Events: db}),
		Config: &config.Admin{Path: filepath.Join(t.TempDir(), "x.json")},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return srv, logs
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	srv, _ := oauthServer(t, refuseAll{}, &blockingTools{})
	for path, resource := range map[string]string{
		"/.well-known/oauth-protected-resource":                 public,
		"/.well-known/oauth-protected-resource/mcp":             public + "/mcp",
		"/.well-known/oauth-protected-resource/mcp/threads/t-1": public + "/mcp/threads/t-1",
	} {
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, w.Code, path)
		require.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
		var doc map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &doc))
		require.Equal(t, map[string]any{
			"resource": resource, "authorization_servers": []any{"https://idp.example.com/realms/a"},
			"scopes_supported": []any{"mcp:tools"}, "bearer_methods_supported": []any{"header"}, "resource_name": "mcpflow",
		}, doc, path)
	}
	// A thread id that cannot be one is no resource.
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp/threads/..", nil))
	require.Equal(t, 404, w.Code)

	// Without identity providers there is no metadata, and the challenge
	// stays the plain one.
	plain, _ := oauthServer(t, nil, &blockingTools{})
	w = httptest.NewRecorder()
	plain.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource", nil))
	require.Equal(t, 404, w.Code)
	w = httptest.NewRecorder()
	plain.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/mcp", strings.NewReader(`{}`)))
	require.Equal(t, 401, w.Code)
	require.Equal(t, `Bearer realm="mcpflow"`, w.Header().Get("WWW-Authenticate"))
}

func TestOAuthChallenges(t *testing.T) {
	t.Parallel()
	v := &tableVerifier{ids: map[string]mcpflow.TokenIdentity{
		"tok-carol":     {UserID: "carol", Provider: "idp", Scopes: []string{"mcp:tools"}, AdminScope: "mcpflow:admin"},
		"tok-noscope":   {UserID: "dave", Provider: "idp", MissingScopes: []string{"mcp:tools"}},
		"tok-admin":     {UserID: "erin", Provider: "idp", Admin: true, Scopes: []string{"mcp:tools", "mcpflow:admin"}},
		"tok-claimuser": {UserID: "frank", Provider: "idp"},
	}}
	tools := &ctxTools{}
	srv, logs := oauthServer(t, v, tools)
	do := func(method, path, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		return w
	}
	// errCode reads a REST error, or the MCP endpoint's JSON-RPC error
	// (its REST code in error.data.code).
	errCode := func(w *httptest.ResponseRecorder) (string, string) {
		if !strings.Contains(w.Body.String(), `"jsonrpc"`) {
			var b api.ErrorBody
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &b), w.Body.String())
			return b.Error.Code, b.Error.Message
		}
		var b struct {
			Error struct {
				Message string `json:"message"`
				Data    struct {
					Code string `json:"code"`
				} `json:"data"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &b), w.Body.String())
		return b.Error.Data.Code, b.Error.Message
	}

	// No token: the challenge names the metadata of the resource asked for.
	for path, prm := range map[string]string{
		"/mcp":                   public + "/.well-known/oauth-protected-resource/mcp",
		"/mcp/threads/t-1":       public + "/.well-known/oauth-protected-resource/mcp/threads/t-1",
		"/api/threads/t-1/tools": public + "/.well-known/oauth-protected-resource",
		"/api/mcp/config":        public + "/.well-known/oauth-protected-resource",
	} {
		method := "POST"
		if strings.HasPrefix(path, "/api") {
			method = "GET"
		}
		w := do(method, path, "")
		require.Equal(t, 401, w.Code, path)
		require.Equal(t, `Bearer resource_metadata="`+prm+`", scope="mcp:tools"`, w.Header().Get("WWW-Authenticate"), path)
	}

	// A thread id that cannot be one never reaches the header.
	w := do("POST", "/mcp/threads/x%22,%20scope=%22admin", "")
	require.Equal(t, 401, w.Code)
	require.Equal(t, `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource", scope="mcp:tools"`, w.Header().Get("WWW-Authenticate"))

	// A token the verifier refuses: 401 invalid_token, the same message
	// whatever the reason; the reason is in the log only.
	w = do("POST", "/mcp/threads/t-1", "tok-forged")
	require.Equal(t, 401, w.Code)
	require.Equal(t, `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource/mcp/threads/t-1", scope="mcp:tools", error="invalid_token"`, w.Header().Get("WWW-Authenticate"))
	code, msg := errCode(w)
	require.Equal(t, "unauthenticated", code)
	require.Equal(t, "invalid bearer token", msg)
	require.NotContains(t, w.Body.String(), "audience")
	require.Contains(t, logs.String(), "access token refused")
	require.Contains(t, logs.String(), "reason=\"invalid access token: audience\"")
	require.NotContains(t, logs.String(), "tok-forged")
	// It was checked against mcpflow's own URI and this thread's.
	require.Equal(t, []string{public, public + "/", public + "/mcp/threads/t-1"}, v.lastResources())
	do("GET", "/api/threads/t-1/tools", "tok-forged")
	require.Equal(t, []string{public, public + "/"}, v.lastResources())

	// A valid token without a required scope: 403 insufficient_scope.
	w = do("POST", "/mcp", "tok-noscope")
	require.Equal(t, 403, w.Code)
	require.Equal(t, `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="insufficient_scope"`, w.Header().Get("WWW-Authenticate"))
	code, msg = errCode(w)
	require.Equal(t, "forbidden", code)
	require.Equal(t, "the access token lacks a required scope: mcp:tools", msg)

	// A signed-in user on an admin route: 403 naming the admin scope; a
	// provider whose admins come from a claim names none.
	w = do("GET", "/api/mcp/config", "tok-carol")
	require.Equal(t, 403, w.Code)
	require.Equal(t, `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource", scope="mcp:tools mcpflow:admin", error="insufficient_scope"`, w.Header().Get("WWW-Authenticate"))
	w = do("GET", "/api/mcp/config", "tok-claimuser")
	require.Equal(t, 403, w.Code)
	require.Empty(t, w.Header().Get("WWW-Authenticate"))

	// A signed-in admin is a user too.
	require.Equal(t, 200, do("GET", "/api/mcp/config", "tok-admin").Code)
	w = do("POST", "/api/threads/t-2/tools/x/call", "tok-admin")
	require.Equal(t, 200, w.Code, w.Body.String())

	// Static tokens keep working beside the providers, and only a signed-in
	// caller's call carries its token on (for token exchange).
	require.Equal(t, 200, do("GET", "/api/mcp/config", adminToken).Code)
	require.Equal(t, 200, do("POST", "/api/threads/t-3/tools/x/call", aliceToken).Code)
	require.Equal(t, 200, do("POST", "/api/threads/t-4/tools/x/call", "tok-carol").Code)
	tools.mu.Lock()
	require.Equal(t, []string{"tok-admin", "", "tok-carol"}, tools.tokens)
	tools.mu.Unlock()

	// The provider cannot be reached: 503 with Retry-After, not a 401
	// that would send the client to sign in again.
	v.mu.Lock()
	v.down = true
	v.mu.Unlock()
	w = do("POST", "/mcp", "tok-carol")
	require.Equal(t, 503, w.Code)
	require.Equal(t, "5", w.Header().Get("Retry-After"))
	code, _ = errCode(w)
	require.Equal(t, "unavailable", code)
	require.False(t, slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(l string) bool { return strings.Contains(l, "tok-carol") }))
}
