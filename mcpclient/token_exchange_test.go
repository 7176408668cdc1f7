package mcpclient_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient"
)

// RFC 8693 token exchange as an upstream credential, against the real demo
// MCP server (recording the headers of every HTTP request and tool call)
// and a real token endpoint on 127.0.0.1.

const (
	callerA = "caller-token-AAAA-signed-in-with-the-idp"
	callerB = "caller-token-BBBB-signed-in-with-the-idp"
)

// exchangeBlock is a token-exchange oauth block with client authentication.
func exchangeBlock(tokenURL string, extra doc) doc {
	b := doc{"token_url": tokenURL, "grant_type": "token_exchange", "client_id": "gw-client", "client_secret": "gw-secret",
		"audience": "https://mcp.example", "scope": "mcp.tools"}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// exchangeReply answers an exchange with exchanged-<n> for an hour, or 400
// invalid_request when the form is not a token exchange.
func exchangeReply(n int, f url.Values) (int, map[string]any) {
	if f.Get("grant_type") != config.GrantTokenExchange || f.Get("subject_token") == "" {
		return 400, map[string]any{"error": "invalid_request"}
	}
	return 200, map[string]any{"access_token": fmt.Sprintf("exchanged-%d", n), "token_type": "Bearer", "expires_in": 3600,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
}

// callAsCaller is an agent's tool call for a caller signed in with the
// identity provider (callerToken "" for one with a static mcpflow token).
func (b *rtBundle) callAsCaller(callerToken, tool string) (*mcpflow.ToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	if callerToken != "" {
		ctx = mcpflow.WithCallerToken(ctx, callerToken)
	}
	return b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "u1", ThreadID: "t1", Tool: tool})
}

// requireNoCallerToken fails when any request the upstream got, or the
// log, carries a caller token or the client secret.
func requireNoCallerToken(t *testing.T, up *credUpstream, b *rtBundle) {
	t.Helper()
	up.mu.Lock()
	defer up.mu.Unlock()
	require.NotEmpty(t, up.requests)
	for _, r := range up.requests {
		for name, vals := range r.headers {
			for _, v := range vals {
				for _, secret := range []string{callerA, callerB, "gw-secret"} {
					require.NotContains(t, v, secret, "header %s of a %q request", name, r.method)
				}
			}
		}
	}
	for _, secret := range []string{callerA, callerB, "gw-secret", "exchanged-"} {
		require.NotContains(t, b.logs.String(), secret)
	}
}

func TestTokenExchangeCall(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, exchangeReply)
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url,
		"headers": doc{"authorization": "Bearer static-discovery", "X-Static": "kept"},
		"oauth": exchangeBlock(tok.URL, doc{"extra_token_params": doc{"resource": "https://mcp.example/mcp",
			"subject_token": "not-this", "grant_type": "password", "requested_token_type": "urn:x"}})}}})

	// Discovery runs on the shared session with no caller: the static
	// header only, no exchange.
	require.Contains(t, byName(b.list(t)), "s_headers")
	for _, r := range append(up.dials(), up.of("tools/list")...) {
		require.Equal(t, "Bearer static-discovery", one(t, r.headers, "Authorization"))
	}
	require.Zero(t, tok.count())
	require.Contains(t, b.logs.String(), "exchanged per signed-in caller")

	// A signed-in caller's call carries the exchanged token, in the OAuth
	// layer over the static header, under the static spelling.
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	h := up.lastCall(t)
	require.Equal(t, "Bearer exchanged-1", one(t, h, "Authorization"))
	require.Equal(t, "kept", one(t, h, "X-Static"))
	require.Equal(t, 1, tok.count())
	f := tok.form(0)
	require.Equal(t, config.GrantTokenExchange, f.Get("grant_type"))
	require.Equal(t, callerA, f.Get("subject_token"), "the caller's token goes to the token endpoint only")
	require.Equal(t, "urn:ietf:params:oauth:token-type:access_token", f.Get("subject_token_type"))
	require.Equal(t, "urn:ietf:params:oauth:token-type:access_token", f.Get("requested_token_type"))
	require.Equal(t, "https://mcp.example", f.Get("audience"))
	require.Equal(t, "https://mcp.example/mcp", f.Get("resource"))
	require.Equal(t, "mcp.tools", f.Get("scope"))
	require.Equal(t, "gw-client", f.Get("client_id"))
	require.Equal(t, "gw-secret", f.Get("client_secret"))
	for k, v := range f {
		require.Len(t, v, 1, "one value of %s", k)
	}

	// The same caller again: the cached token, no second exchange.
	res, err = b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "Bearer exchanged-1", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, 1, tok.count())

	// Another caller gets its own exchange.
	res, err = b.callAsCaller(callerB, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "Bearer exchanged-2", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, 2, tok.count())
	require.Equal(t, callerB, tok.form(1).Get("subject_token"))
	res, err = b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "Bearer exchanged-1", one(t, up.lastCall(t), "Authorization"), "each caller keeps its own token")
	require.Equal(t, 2, tok.count())

	// A caller without an identity-provider token (a static mcpflow
	// token) is refused before anything is sent: neither unauthenticated
	// nor with anyone's token.
	before := len(up.calls())
	res, err = b.callAsCaller("", "s_headers")
	require.NoError(t, err)
	require.Equal(t, "MCP server 's' needs a caller signed in with the identity provider: its credential is exchanged from the caller's token (RFC 8693), which only a tool call has while the caller's request is open (a durable task's steps run without it).", errorText(t, res))
	require.Len(t, up.calls(), before, "a refused call never reaches the server")
	require.Equal(t, 2, tok.count(), "nothing to exchange, no token request")

	// A durable submit (request-scoped, in a task activity, no caller
	// token) is refused the same way.
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	_, err = b.rt.Call(mcpclient.WithSecrets(ctx, nil), b.server(t, "s"), "headers", "u1", "t1", map[string]any{})
	var ce *mcpclient.CredentialError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Message, "needs a caller signed in with the identity provider")

	// A durable status/cancel poll (no request context, no caller token)
	// goes without an exchanged token: the static header only.
	require.NoError(t, b.durableCall(t, "s", "headers", "u1"))
	require.Equal(t, "Bearer static-discovery", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, 2, tok.count())

	requireNoCallerToken(t, up, b)
	require.Equal(t, 1, strings.Count(b.logs.String(), "exchanged per signed-in caller"), "warned once per server")
}

// The answer is read with the block's own field names, as for the other
// grants (spec §3.4).
func TestTokenExchangeFieldNames(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"token": fmt.Sprintf("exchanged-%d", n), "kind": "DPoP", "ttl": 3600}
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url,
		"oauth": exchangeBlock(tok.URL, doc{"token_field": "token", "token_type_field": "kind", "expires_in_field": "ttl"})}}})
	for range 2 {
		res, err := b.callAsCaller(callerA, "s_headers")
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res)
	}
	require.Equal(t, "DPoP exchanged-1", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, 1, tok.count(), "ttl read as the lifetime")
}

// SSE works the same; without static headers the shared session's own
// requests carry no Authorization at all. A token type of "N_A" (RFC 8693
// §2.2.1) means default_token_type.
func TestTokenExchangeSSE(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportSSE)
	tok := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": fmt.Sprintf("exchanged-%d", n), "token_type": "N_A", "expires_in": "30",
			"issued_token_type": "urn:ietf:params:oauth:token-type:jwt"}
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "sse", "url": up.url,
		"oauth": doc{"token_url": tok.URL, "grant_type": config.GrantTokenExchange, "audience": "https://mcp.example"}}}})
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Equal(t, "Bearer exchanged-1", one(t, up.lastCall(t), "Authorization"))
	res, err = b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Equal(t, 2, tok.count(), "an expires_in given as a string is read too: 30 s is within the 60 s refresh skew")
	f := tok.form(0)
	require.Empty(t, f.Get("client_id"), "client authentication is optional")
	require.Empty(t, f.Get("client_secret"))
	require.Empty(t, f.Get("scope"))
	require.Equal(t, "https://mcp.example", f.Get("audience"))
	for _, r := range append(up.dials(), up.of("tools/list")...) {
		require.Empty(t, r.headers.Values("Authorization"), r.method)
	}
	requireNoCallerToken(t, up, b)
}

// A refusal by the token endpoint is a tool error naming the server and
// the endpoint's error code, never the tokens, the client secret or the
// error description; it is not cached. An endpoint that is down is an
// upstream failure; one answering the caller's own token is refused.
func TestTokenExchangeFailures(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	var mu sync.Mutex
	reply := func(_ int, f url.Values) (int, map[string]any) {
		return 400, map[string]any{"error": "invalid_grant", "error_description": "subject_token " + f.Get("subject_token") + " is not accepted for client gw-secret"}
	}
	tok := newTokenEndpoint(t, func(n int, f url.Values) (int, map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		return reply(n, f)
	})
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, nil)}}})
	b.list(t)
	before := len(up.calls())
	for i := 1; i <= 2; i++ {
		res, err := b.callAsCaller(callerA, "s_headers")
		require.NoError(t, err, "a refused exchange is a tool error")
		msg := errorText(t, res)
		require.Equal(t, "MCP server 's' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP 400, error 'invalid_grant'.", msg)
		require.Equal(t, i, tok.count(), "a failure is not cached")
	}
	require.Len(t, up.calls(), before, "nothing reached the server")

	// An error code that is free text is left out.
	mu.Lock()
	reply = func(int, url.Values) (int, map[string]any) {
		return 401, map[string]any{"error": "bad token " + callerA}
	}
	mu.Unlock()
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.Equal(t, "MCP server 's' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP 401.", errorText(t, res))

	// A token endpoint that is down fails the call as upstream (502).
	mu.Lock()
	reply = func(int, url.Values) (int, map[string]any) {
		return 503, map[string]any{"error": "temporarily_unavailable"}
	}
	mu.Unlock()
	_, err = b.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUpstream)
	require.Equal(t, "MCP server 's' token exchange (RFC 8693) failed: the token endpoint answered HTTP 503", mcpflow.ErrorMessage(err))

	// An answer that is the caller's own token is never passed through.
	mu.Lock()
	reply = func(_ int, f url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": f.Get("subject_token"), "token_type": "Bearer", "expires_in": 3600}
	}
	mu.Unlock()
	_, err = b.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUpstream)
	require.Equal(t, "MCP server 's' token exchange (RFC 8693) failed: the token endpoint answered with the caller's own token, which is never passed through", mcpflow.ErrorMessage(err))

	// An unreachable token endpoint.
	b2 := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url,
		"oauth": exchangeBlock("http://127.0.0.1:1/token", nil)}}})
	_, err = b2.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUpstream)
	require.Equal(t, "MCP server 's' token exchange (RFC 8693) failed: the token request failed", mcpflow.ErrorMessage(err))

	require.Len(t, up.calls(), before, "nothing reached the server")
	requireNoCallerToken(t, up, b)
	requireNoCallerToken(t, up, b2)
}

// Concurrent calls of one caller share one exchange; a token due for a
// refresh (expires_in within refresh_skew_seconds) is exchanged again; an
// edited oauth block gets fresh tokens.
func TestTokenExchangeSingleFlightAndExpiry(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, exchangeReply)
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, nil)}}})
	b.list(t)
	gate := make(chan struct{})
	tok.mu.Lock()
	tok.gate = gate
	tok.mu.Unlock()

	const callers = 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			res, err := b.callAsCaller(callerA, "s_headers")
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			errs <- err
		})
	}
	// Every caller waits for the one exchange, which the endpoint holds.
	require.Eventually(t, func() bool {
		return goroutinesIn("mcpclient.(*tokenExchanges).header(") == callers && tok.count() == 1
	}, generous, 5*time.Millisecond, "every caller waits for the one exchange")
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, tok.count(), "20 concurrent calls of one caller made one exchange")
	for _, c := range up.calls() {
		require.Equal(t, "Bearer exchanged-1", c.Headers.Get("Authorization"))
	}

	// A 30 s token with a 60 s skew is due as soon as it arrives.
	short := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": fmt.Sprintf("short-%d", n), "token_type": "Bearer", "expires_in": 30}
	})
	b.write(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(short.URL, nil)}}})
	b.settle()
	for i := 1; i <= 2; i++ {
		res, err := b.callAsCaller(callerA, "s_headers")
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res)
		require.Equal(t, fmt.Sprintf("Bearer short-%d", i), one(t, up.lastCall(t), "Authorization"))
	}
	require.Equal(t, 2, short.count())

	// The same endpoint with another audience: a fresh exchange.
	b.write(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, doc{"audience": "https://other"})}}})
	b.settle()
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Equal(t, "Bearer exchanged-2", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, "https://other", tok.form(1).Get("audience"))
	requireNoCallerToken(t, up, b)
}

// The cache is bounded: once 1024 other callers exchanged, the first
// caller's token is gone and exchanged again.
func TestTokenExchangeCacheBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("1025 exchanges")
	}
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, exchangeReply)
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, nil)}}})
	call := func(caller string) error {
		res, err := b.callAsCaller(caller, "s_headers")
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	}
	require.NoError(t, call("first-caller"))
	require.NoError(t, call("first-caller"))
	require.Equal(t, 1, tok.count())

	const others = 1024
	callers := make(chan string)
	errs := make(chan error, others)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for c := range callers {
				errs <- call(c)
			}
		})
	}
	for i := range others {
		callers <- fmt.Sprintf("caller-%d", i)
	}
	close(callers)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1+others, tok.count())
	require.NoError(t, call("first-caller"))
	require.Equal(t, 2+others, tok.count(), "the least recently used token was evicted")
}
