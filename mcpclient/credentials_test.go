package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
)

// Spec §6 (header precedence and credential scenarios), against the real
// demo MCP server (in-process, over streamable HTTP or SSE) that records
// the headers of every HTTP request and tool call, and a real token
// endpoint that counts its requests.

// credUpstream is a demo server whose requests are recorded.
type credUpstream struct {
	url  string
	demo *demomcp.Server

	mu       sync.Mutex
	requests []credRequest
}

// credRequest is one HTTP request the upstream got.
type credRequest struct {
	method  string // JSON-RPC method ("" for a GET stream)
	headers http.Header
	session string // the MCP session it named: Mcp-Session-Id, or SSE's sessionId query parameter
}

func newCredUpstream(t *testing.T, transport string) *credUpstream {
	t.Helper()
	demo, err := demomcp.New(demomcp.Config{Workdir: t.TempDir(), RecordCalls: true})
	require.NoError(t, err)
	h, closeAll, err := demo.HTTPHandler(transport)
	require.NoError(t, err)
	u := &credUpstream{demo: demo}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		u.mu.Lock()
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			sid = r.URL.Query().Get("sessionId")
		}
		u.requests = append(u.requests, credRequest{method: msg.Method, headers: r.Header.Clone(), session: sid})
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		closeAll(context.Background())
		ts.Close()
	})
	u.url = sessEndpoint(ts.URL, transport)
	return u
}

// dials returns the recorded requests that opened a session: the
// 2026-07-28 server/discover probe, or a 2025-11-25 initialize.
func (u *credUpstream) dials() []credRequest {
	return append(u.of("server/discover"), u.of("initialize")...)
}

// of returns the recorded requests of one JSON-RPC method.
func (u *credUpstream) of(method string) []credRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []credRequest
	for _, r := range u.requests {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// calls returns the tool calls the demo server handled.
func (u *credUpstream) calls() []demomcp.RecordedCall { return u.demo.RecordedCalls() }

// lastCall is the headers of the latest tool call.
func (u *credUpstream) lastCall(t *testing.T) http.Header {
	t.Helper()
	c := u.calls()
	require.NotEmpty(t, c, "no tool call reached the server")
	return c[len(c)-1].Headers
}

// tokenEndpoint is an OAuth token endpoint that counts requests.
type tokenEndpoint struct {
	*httptest.Server

	mu    sync.Mutex
	forms []url.Values
	// reply builds the JSON answer to the n-th request (from 1); status is
	// its HTTP status.
	reply func(n int, form url.Values) (status int, body map[string]any)
	// gate, when set, holds every request until it is closed.
	gate chan struct{}
}

func newTokenEndpoint(t *testing.T, reply func(n int, form url.Values) (int, map[string]any)) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{reply: reply}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		e.mu.Lock()
		e.forms = append(e.forms, r.PostForm)
		n := len(e.forms)
		gate := e.gate
		e.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		status, body := e.reply(n, r.PostForm)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(e.Close)
	return e
}

// fixedToken answers token-<n> for an hour.
func fixedToken(prefix string) func(int, url.Values) (int, map[string]any) {
	return func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": fmt.Sprintf("%s-%d", prefix, n), "token_type": "Bearer", "expires_in": 3600}
	}
}

func (e *tokenEndpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.forms)
}

func (e *tokenEndpoint) form(i int) url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.forms[i]
}

func oauthBlock(tokenURL string, extra doc) doc {
	b := doc{"token_url": tokenURL, "client_id": "cid", "client_secret": "csecret"}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// callWith is an agent's call with request secrets; it returns the result
// (a tool error for a refused credential).
func (b *rtBundle) callWith(t *testing.T, user, tool string, secrets map[string]string) *mcpflow.ToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	res, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: user, ThreadID: "t1", Tool: tool, Secrets: secrets})
	require.NoError(t, err, "call %s", tool)
	return res
}

// server returns the configured server name as the runtime reads it.
func (b *rtBundle) server(t *testing.T, name string) *config.Server {
	t.Helper()
	ext, err := config.LoadExtensions(b.path, nil)
	require.NoError(t, err)
	s, ok := ext.Lookup(name)
	require.True(t, ok)
	return s
}

// durableCall is a status/cancel poll of a durable task: no request
// context, the task owner as user.
func (b *rtBundle) durableCall(t *testing.T, server, tool, owner string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	_, err := b.rt.Call(ctx, b.server(t, server), tool, owner, "t1", map[string]any{})
	return err
}

func errorText(t *testing.T, res *mcpflow.ToolResult) string {
	t.Helper()
	require.True(t, res.IsError, "expected a tool error, got %+v", res)
	return text(t, res)
}

func one(t *testing.T, h http.Header, name string) string {
	t.Helper()
	v := h.Values(name)
	require.Len(t, v, 1, "exactly one %s header reaches the wire: %v", name, h)
	return v[0]
}

// §6 #1, #29: a durable status call opens the session with the static and
// OAuth headers and calls with them; a lower-case static spelling and the
// OAuth header give exactly one header.
func TestCredentialsDurableCallOAuthAndStatic(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{"X-Unused", "authorization"} {
		t.Run(spelling, func(t *testing.T) {
			t.Parallel()
			up := newCredUpstream(t, config.TransportHTTP)
			tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
				return 200, map[string]any{"access_token": "task-token", "token_type": "Bearer"}
			})
			b := newRuntime(t, doc{"mcpServers": doc{"srv": doc{"type": "http", "url": up.url,
				"headers": doc{"X-Static": "configured", spelling: "static-value"}, "oauth": oauthBlock(tok.URL, nil)}}})
			require.NoError(t, b.durableCall(t, "srv", "headers", "owner"))
			init := up.dials()
			require.Len(t, init, 1)
			for _, h := range []http.Header{init[0].headers, up.lastCall(t)} {
				require.Equal(t, "configured", one(t, h, "X-Static"))
				require.Equal(t, "Bearer task-token", one(t, h, "Authorization"))
			}
			require.Equal(t, 1, tok.count())
		})
	}
}

// §6 #2: SSE with client_credentials keeps the other headers.
func TestCredentialsSSEOAuth(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportSSE)
	tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "token-abc", "token_type": "Bearer", "expires_in": 3600}
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "sse", "url": up.url, "headers": doc{"X-Test": "1"},
		"oauth": oauthBlock(tok.URL, nil)}}})
	res := b.callWith(t, "u1", "s_headers", nil)
	require.False(t, res.IsError)
	h := up.lastCall(t)
	require.Equal(t, "1", one(t, h, "X-Test"))
	require.Equal(t, "Bearer token-abc", one(t, h, "Authorization"))
}

// §6 #3, #4: discovery sends each server its own OAuth header, one token
// request per server; a failing token endpoint only costs its server the
// header.
func TestCredentialsDiscoveryHeaders(t *testing.T) {
	t.Parallel()
	withOAuth := newCredUpstream(t, config.TransportHTTP)
	without := newCredUpstream(t, config.TransportHTTP)
	broken := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "token-initial", "token_type": "Bearer"}
	})
	bad := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) { return 500, map[string]any{"error": "down"} })
	b := newRuntime(t, doc{"mcpServers": doc{
		"a": doc{"type": "http", "url": withOAuth.url, "oauth": oauthBlock(tok.URL, nil)},
		"b": doc{"type": "http", "url": without.url},
		"c": doc{"type": "http", "url": broken.url, "oauth": oauthBlock(bad.URL, nil)},
	}})
	tools := byName(b.list(t))
	require.Contains(t, tools, "a_echo")
	require.Contains(t, tools, "b_echo")
	require.Contains(t, tools, "c_echo", "a failing token endpoint does not skip a server that answers without it")
	for _, m := range []string{"dial", "tools/list"} {
		of := func(u *credUpstream) []credRequest {
			if m == "dial" {
				return u.dials()
			}
			return u.of(m)
		}
		require.Equal(t, "Bearer token-initial", one(t, of(withOAuth)[0].headers, "Authorization"), m)
		require.Empty(t, of(without)[0].headers.Values("Authorization"), m)
		require.Empty(t, of(broken)[0].headers.Values("Authorization"), m)
	}
	require.Equal(t, 1, tok.count(), "one token request serves discovery")
	require.Contains(t, b.logs.String(), "OAuth token is unavailable")
	require.NotContains(t, b.logs.String(), "csecret")

	// A call to the broken server fails; the others keep working.
	res, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "u", ThreadID: "t1", Tool: "c_echo", Arguments: map[string]any{"message": "x"}})
	require.Nil(t, res)
	requireCode(t, err, mcpflow.EUpstream)
	require.Equal(t, "MCP server 'c' OAuth token request failed: the token endpoint answered HTTP 500", mcpflow.ErrorMessage(err))
	require.False(t, b.call(t, "a_echo", map[string]any{"message": "x"}).IsError)
	require.False(t, b.call(t, "b_echo", map[string]any{"message": "x"}).IsError)
}

// §6 #5: extra_token_params pass through but never override reserved
// fields.
func TestCredentialsTokenFormReservedFields(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, fixedToken("t"))
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": oauthBlock(tok.URL, doc{
		"scope": "read write", "audience": "api://x",
		"extra_token_params": doc{"grant_type": "password", "resource": "https://res", "client_secret": "overridden", "scope": "admin"},
	})}}})
	require.False(t, b.callWith(t, "u", "s_headers", nil).IsError)
	f := tok.form(0)
	require.Equal(t, "client_credentials", f.Get("grant_type"))
	require.Equal(t, "https://res", f.Get("resource"))
	require.Equal(t, "csecret", f.Get("client_secret"))
	require.Equal(t, "cid", f.Get("client_id"))
	require.Equal(t, "read write", f.Get("scope"))
	require.Equal(t, "api://x", f.Get("audience"))
}

// §6 #6: a refresh_token grant uses the seed, then the rotated token.
func TestCredentialsRefreshTokenRotation(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(n int, f url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": fmt.Sprintf("access-%d", n), "token_type": "Bearer",
			"expires_in": 30, "refresh_token": fmt.Sprintf("rotated-%d", n)}
	})
	// A 30 s token with a 60 s skew is always due for a refresh.
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": doc{
		"token_url": tok.URL, "grant_type": "refresh_token", "refresh_token": "seed-token", "refresh_skew_seconds": 60,
	}}}})
	for i := 0; i < 2; i++ {
		require.False(t, b.callWith(t, "u", "s_headers", nil).IsError)
	}
	require.GreaterOrEqual(t, tok.count(), 3) // discovery, then two calls
	require.Equal(t, "refresh_token", tok.form(0).Get("grant_type"))
	require.Equal(t, "seed-token", tok.form(0).Get("refresh_token"))
	require.Equal(t, "rotated-1", tok.form(1).Get("refresh_token"))
	require.Equal(t, "rotated-2", tok.form(2).Get("refresh_token"), "each refresh uses the newest rotated token")
	require.Equal(t, fmt.Sprintf("Bearer access-%d", tok.count()), one(t, up.lastCall(t), "Authorization"))
}

// §6 #7 and custom field names: a token is cached for its lifetime.
func TestCredentialsTokenCacheAndCustomFields(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"jwt": "custom-tok", "kind": "Token", "ttl": "3600"}
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": oauthBlock(tok.URL, doc{
		"token_field": "jwt", "token_type_field": "kind", "expires_in_field": "ttl",
	})}}})
	for i := 0; i < 3; i++ {
		require.False(t, b.callWith(t, "u", "s_headers", nil).IsError)
	}
	require.Equal(t, 1, tok.count())
	require.Equal(t, "Token custom-tok", one(t, up.lastCall(t), "Authorization"))

	missing := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "x"}
	})
	b2 := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": oauthBlock(missing.URL, doc{"token_field": "jwt"})}}})
	_, err := b2.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "u", ThreadID: "t1", Tool: "s_headers"})
	require.Equal(t, "MCP server 's' OAuth token request failed: OAuth token response missing 'jwt'", mcpflow.ErrorMessage(err))
}

// §6 #8 and the concurrency point: 50 parallel calls with an
// expired token cause one token request, and nobody deadlocks.
func TestCredentialsSingleFlightRefresh(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	var lasting atomic.Bool
	tok := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		// With a 60 s skew a 30 s token is due for a refresh as soon as
		// it arrives, whatever the clock says: so are discovery's; the
		// refresh's lasts.
		exp := 30
		if lasting.Load() {
			exp = 3600
		}
		return 200, map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "Bearer", "expires_in": exp}
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": oauthBlock(tok.URL, doc{"refresh_skew_seconds": 60})}}})
	b.list(t) // discovery's token is due now
	gate := make(chan struct{})
	tok.mu.Lock()
	tok.gate = gate // the refresh is held until every caller waits for it
	tok.mu.Unlock()
	lasting.Store(true)
	before := tok.count()
	require.NotZero(t, before)

	const callers = 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			res, err := b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "u", ThreadID: "t1", Tool: "s_headers"})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %s", res.Content)
			}
			errs <- err
		})
	}
	// All 50 are inside the OAuth token cache at once (one of them in the
	// held token request) before the endpoint answers.
	require.Eventually(t, func() bool { return goroutinesIn("credential.(*oauthTokens).header(") == callers },
		generous, 5*time.Millisecond, "every caller waits for the token (goroutines in oauthTokens.header: %d)", goroutinesIn("credential.(*oauthTokens).header("))
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, before+1, tok.count(), "50 calls with an expired token made one token request")
	calls := 0
	for _, c := range up.calls() {
		if c.Tool == "headers" {
			require.Equal(t, fmt.Sprintf("Bearer tok-%d", before+1), c.Headers.Get("Authorization"))
			calls++
		}
	}
	require.Equal(t, callers, calls)
}

// goroutinesIn counts the goroutines whose stack holds a frame of fn (as
// runtime.Stack prints it, e.g. "pkg.(*T).method(").
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// §6 #9–#16: user_auth.
func TestCredentialsUserAuth(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	other := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "oauth-token", "token_type": "Bearer"}
	})
	b := newRuntime(t, doc{"mcpServers": doc{
		"ua": doc{"type": "http", "url": up.url, "headers": doc{"Authorization": "Bearer discovery-token"},
			"user_auth": doc{"users": doc{"u1": "Bearer t1", "u2": "Bearer t2", "empty": "$UNSET_CRED_VAR"}}},
		"key": doc{"type": "http", "url": up.url, "headers": doc{"Accept-Language": "en"},
			"user_auth": doc{"header": "X-Api-Key", "users": doc{"u1": "k1"}}},
		"pass": doc{"type": "http", "url": up.url, "headers": doc{"Authorization": "Bearer discovery-token"},
			"user_auth": doc{"users": doc{"u1": "Bearer t1"}, "on_missing": "passthrough"}},
		"both": doc{"type": "http", "url": up.url, "oauth": oauthBlock(tok.URL, nil),
			"user_auth": doc{"users": doc{"u1": "Bearer user-cred"}}},
		"other": doc{"type": "http", "url": other.url, "oauth": oauthBlock(tok.URL, nil)},
	}})

	// #9 the calling user's credential replaces the static discovery header.
	require.False(t, b.callWith(t, "u2", "ua_headers", nil).IsError)
	require.Equal(t, "Bearer t2", one(t, up.lastCall(t), "Authorization"))
	// #10 a custom header next to the others.
	require.False(t, b.callWith(t, "u1", "key_headers", nil).IsError)
	h := up.lastCall(t)
	require.Equal(t, "k1", one(t, h, "X-Api-Key"))
	require.Equal(t, "en", one(t, h, "Accept-Language"))
	// #11 and #16: another server is untouched; OAuth < user_auth.
	require.False(t, b.callWith(t, "u1", "other_headers", nil).IsError)
	require.Equal(t, "Bearer oauth-token", one(t, other.lastCall(t), "Authorization"))
	require.Empty(t, other.lastCall(t).Values("X-Api-Key"))
	require.False(t, b.callWith(t, "u1", "both_headers", nil).IsError)
	require.Equal(t, "Bearer user-cred", one(t, up.lastCall(t), "Authorization"))

	// #12, #13, #15: deny names the user id; the handler is not called.
	before := len(up.calls())
	for _, user := range []string{"stranger-uuid", "empty"} {
		msg := errorText(t, b.callWith(t, user, "ua_headers", nil))
		require.Equal(t, fmt.Sprintf("No credential is configured for your account (user id '%s') on MCP server 'ua'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable).", user), msg)
	}
	require.Len(t, up.calls(), before, "a denied call never reaches the server")
	// #14 passthrough keeps the static header.
	require.False(t, b.callWith(t, "stranger", "pass_headers", nil).IsError)
	require.Equal(t, "Bearer discovery-token", one(t, up.lastCall(t), "Authorization"))

	// Durable polls bind the task owner.
	require.NoError(t, b.durableCall(t, "ua", "headers", "u1"))
	require.Equal(t, "Bearer t1", one(t, up.lastCall(t), "Authorization"))
	err := b.durableCall(t, "ua", "headers", "nobody")
	var ce *credential.CredentialError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Message, "user id 'nobody'")
}

// §6 #17–#25, #37: headers_from_context.
func TestCredentialsHeadersFromContext(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	b := newRuntime(t, doc{"mcpServers": doc{
		"t": doc{"type": "http", "url": up.url, "headers": doc{"Accept": "application/json"},
			"headers_from_context": doc{"headers": doc{"X-Tenant-Token": "tenant_token"}}},
		"auth": doc{"type": "http", "url": up.url, "headers": doc{"Authorization": "Bearer discovery-token"},
			"headers_from_context": doc{"headers": doc{"authorization": "tenant_token"}}},
		"two": doc{"type": "http", "url": up.url,
			"headers_from_context": doc{"headers": doc{"X-Tenant-Id": "tenant_id", "X-Org": "org"}}},
		"passauth": doc{"type": "http", "url": up.url, "headers": doc{"Authorization": "Bearer discovery-token"},
			"headers_from_context": doc{"headers": doc{"Authorization": "tenant_token"}, "on_missing": "passthrough"}},
		"passtwo": doc{"type": "http", "url": up.url,
			"headers_from_context": doc{"headers": doc{"X-Tenant-Id": "tenant_id", "X-Org": "org"}, "on_missing": "passthrough"}},
	}})
	// #17, #18: set next to the static headers; the secrets map is not changed.
	secrets := map[string]string{"tenant_token": "tenant-secret-value", "unrelated": "other-secret"}
	require.False(t, b.callWith(t, "u", "t_headers", secrets).IsError)
	h := up.lastCall(t)
	require.Equal(t, "tenant-secret-value", one(t, h, "X-Tenant-Token"))
	require.Equal(t, "application/json", one(t, h, "Accept"))
	require.Equal(t, map[string]string{"tenant_token": "tenant-secret-value", "unrelated": "other-secret"}, secrets)
	require.Empty(t, h.Values("Unrelated"))
	// #19 the per-request value replaces the static one (any spelling).
	require.False(t, b.callWith(t, "u", "auth_headers", map[string]string{"tenant_token": "Bearer per-request"}).IsError)
	require.Equal(t, "Bearer per-request", one(t, up.lastCall(t), "Authorization"))
	// #20 two mappings.
	require.False(t, b.callWith(t, "u", "two_headers", map[string]string{"tenant_id": "t-1", "org": "o-1"}).IsError)
	h = up.lastCall(t)
	require.Equal(t, "t-1", one(t, h, "X-Tenant-Id"))
	require.Equal(t, "o-1", one(t, h, "X-Org"))

	// #21, #22, #23: deny names only the missing keys; nothing is called.
	before := len(up.calls())
	for _, s := range []map[string]string{{"other": "value-that-must-not-leak"}, {"tenant_token": ""}, nil} {
		msg := errorText(t, b.callWith(t, "u", "t_headers", s))
		require.Equal(t, "MCP server 't' needs request-scoped credential(s) tenant_token. Send them in the call's secrets, or set this server's headers_from_context.on_missing to 'passthrough'.", msg)
		require.NotContains(t, msg, "value-that-must-not-leak")
	}
	msg := errorText(t, b.callWith(t, "u", "two_headers", map[string]string{"org": "o"}))
	require.Contains(t, msg, "credential(s) tenant_id.")
	require.Len(t, up.calls(), before)

	// #24 passthrough without secrets keeps the static header; #25 only the
	// present secret is injected.
	require.False(t, b.callWith(t, "u", "passauth_headers", nil).IsError)
	require.Equal(t, "Bearer discovery-token", one(t, up.lastCall(t), "Authorization"))
	require.False(t, b.callWith(t, "u", "passtwo_headers", map[string]string{"org": "o-2"}).IsError)
	h = up.lastCall(t)
	require.Equal(t, "o-2", one(t, h, "X-Org"))
	require.Empty(t, h.Values("X-Tenant-Id"))

	// #37 a durable status call has no request context: not denied, static
	// headers only.
	require.NoError(t, b.durableCall(t, "auth", "headers", "u"))
	require.Equal(t, "Bearer discovery-token", one(t, up.lastCall(t), "Authorization"))
	require.NotContains(t, b.logs.String(), "tenant-secret-value")
}

// §6 #26–#28: OAuth < user_auth < headers_from_context, case-insensitive,
// one header per name under the static spelling.
func TestCredentialsPrecedence(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "oauth-token", "token_type": "Bearer"}
	})
	b := newRuntime(t, doc{"mcpServers": doc{
		"all": doc{"type": "http", "url": up.url, "headers": doc{"authorization": "Bearer static"},
			"oauth":                oauthBlock(tok.URL, nil),
			"user_auth":            doc{"users": doc{"u1": "Bearer per-user"}},
			"headers_from_context": doc{"headers": doc{"AUTHORIZATION": "tok"}, "on_missing": "passthrough"}},
		"lower": doc{"type": "http", "url": up.url, "headers": doc{"authorization": "Bearer static"},
			"user_auth": doc{"header": "Authorization", "users": doc{"u1": "Bearer per-user"}}},
		"oauthonly": doc{"type": "http", "url": up.url, "headers": doc{"authorization": "Bearer static"},
			"oauth": oauthBlock(tok.URL, nil)},
	}})
	require.False(t, b.callWith(t, "u1", "all_headers", map[string]string{"tok": "Bearer from-request"}).IsError)
	require.Equal(t, "Bearer from-request", one(t, up.lastCall(t), "Authorization"))
	require.False(t, b.callWith(t, "u1", "all_headers", nil).IsError)
	require.Equal(t, "Bearer per-user", one(t, up.lastCall(t), "Authorization"), "user_auth beats OAuth")
	require.False(t, b.callWith(t, "u1", "lower_headers", nil).IsError)
	require.Equal(t, "Bearer per-user", one(t, up.lastCall(t), "Authorization"))
	require.False(t, b.callWith(t, "u1", "oauthonly_headers", nil).IsError)
	require.Equal(t, "Bearer oauth-token", one(t, up.lastCall(t), "Authorization"))
}

// §6 #32, #33: illegal values are never sent and never echoed; legal ones
// are.
func TestCredentialsIllegalValues(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	illegal := []string{"Bearer x9\n", "x9\r", "a9\r\nX-Injected: b9", "a9\x00b", "a9\x0bb", "a9\x0cb", " lead9", "trail9 ", "trail9\t", "café9", "Привет9"}
	b := newRuntime(t, doc{"mcpServers": doc{
		"h": doc{"type": "http", "url": up.url, "headers_from_context": doc{"headers": doc{"X-Cred": "cred"}}},
	}})
	before := len(up.calls())
	for _, v := range illegal {
		msg := errorText(t, b.callWith(t, "u", "h_headers", map[string]string{"cred": v}))
		require.True(t, strings.HasPrefix(msg, "The request-scoped credential 'cred' for MCP server 'h' "), msg)
		require.NotContains(t, msg, strings.TrimSpace(v))
	}
	require.Len(t, up.calls(), before, "an illegal value is never sent")
	// "a\x7fb" (DEL) passes the check too (config tests), but Go's HTTP
	// server answers it with 400, so it is not sent here.
	for _, v := range []string{"Bearer sk-token", "Bearer abc\tdef", "two words"} {
		require.False(t, b.callWith(t, "u", "h_headers", map[string]string{"cred": v}).IsError, "%q", v)
		require.Equal(t, v, one(t, up.lastCall(t), "X-Cred"))
	}

	// A user_auth credential with a line break is refused without echo.
	b2 := newRuntime(t, doc{"mcpServers": doc{"h": doc{"type": "http", "url": up.url,
		"user_auth": doc{"users": doc{"u": "Bearer ok\r\nX-Evil: 1"}}}}})
	msg := errorText(t, b2.callWith(t, "u", "h_headers", nil))
	require.Equal(t, "The credential configured for user id 'u' on MCP server 'h' contains a line break or another forbidden control character; fix it in that server's user_auth.users.", msg)

	// An OAuth token that would inject a header fails closed.
	tok := newTokenEndpoint(t, func(int, url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": "tok\r\nX-Evil: 1", "token_type": "Bearer"}
	})
	b3 := newRuntime(t, doc{"mcpServers": doc{"h": doc{"type": "http", "url": up.url, "oauth": oauthBlock(tok.URL, nil)}}})
	_, err := b3.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "u", ThreadID: "t1", Tool: "h_headers"})
	require.Equal(t, mcpflow.EUpstream, mcpflow.ErrorCode(err), "a broken token endpoint is an upstream failure (502), like one that is down")
	require.Equal(t, "MCP server 'h' OAuth token request failed: the returned token contains a line break or another forbidden control character", mcpflow.ErrorMessage(err))
	require.NotContains(t, err.Error(), "X-Evil")

	// A static header value that is illegal drops its server (with a
	// reason) while others work.
	b4 := newRuntime(t, doc{"mcpServers": doc{
		"bad":  doc{"type": "http", "url": up.url, "headers": doc{"X-Key": "secret\nvalue"}},
		"good": doc{"type": "http", "url": up.url},
	}})
	tools := byName(b4.list(t))
	require.NotContains(t, tools, "bad_echo")
	require.Contains(t, tools, "good_echo")
	require.Contains(t, b4.logs.String(), "contains a line break or another forbidden control character")
	require.NotContains(t, b4.logs.String(), "secret\\nvalue")
}

// §6 #31: two spellings of one header are rejected at load.
func TestCredentialsTwoSpellingsRejected(t *testing.T) {
	t.Parallel()
	_, err := config.ParseExtensions([]byte(`{"mcpServers": {"s": {"type": "http", "url": "http://127.0.0.1:1/mcp",
		"headers": {"Authorization": "a", "authorization": "b"}}}}`), "ext.json", nil)
	require.ErrorContains(t, err, "two spellings")
}

// §6 #34, #35, #38: stdio servers get the OAuth header as call _meta, no
// _meta without it, and user_auth / headers_from_context do not apply.
func TestCredentialsStdio(t *testing.T) {
	t.Parallel()
	tok := newTokenEndpoint(t, fixedToken("stdio-token"))
	b := newRuntime(t, doc{"mcpServers": doc{
		"o": stdioDemo(t, doc{"args": []string{"--transport", "stdio", "--record-calls"}, "oauth": oauthBlock(tok.URL, nil)}),
		"p": stdioDemo(t, doc{"args": []string{"--transport", "stdio"},
			"user_auth":            doc{"users": doc{}},
			"headers_from_context": doc{"headers": doc{"X-T": "t"}}}),
	}})
	res := b.callWith(t, "u", "o_headers", nil)
	require.False(t, res.IsError)
	require.Equal(t, map[string]any{"Authorization": "Bearer stdio-token-1"}, res.StructuredContent.(map[string]any)["meta_headers"])

	res = b.callWith(t, "u", "p_headers", nil) // user_auth would deny, headers_from_context too
	require.False(t, res.IsError, "user_auth and headers_from_context are skipped for stdio servers")
	require.NotContains(t, res.StructuredContent.(map[string]any), "meta_headers", "no interceptor headers, no _meta")
	require.Contains(t, b.logs.String(), "user_auth applies to sse/http MCP servers only")
	require.Contains(t, b.logs.String(), "headers_from_context applies to sse/http MCP servers only")
}
