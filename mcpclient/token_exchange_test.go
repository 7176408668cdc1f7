package mcpclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testidp"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
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
	return b.callAsUser("u1", callerToken, tool)
}

// callAsUser is callAsCaller for user.
func (b *rtBundle) callAsUser(user, callerToken, tool string) (*mcpflow.ToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	if callerToken != "" {
		ctx = mcpflow.WithCallerToken(ctx, callerToken)
	}
	return b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: user, ThreadID: "t1", Tool: tool})
}

// listAsUser is user's tool listing, signed in with callerToken ("" for a
// static mcpflow token), and the servers it says are unavailable.
func (b *rtBundle) listAsUser(t *testing.T, user, callerToken string) (map[string]mcpflow.Tool, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	if callerToken != "" {
		ctx = mcpflow.WithCallerToken(ctx, callerToken)
	}
	tools, err := b.rt.ListTools(ctx, user, "t1")
	require.NoError(t, err)
	down, err := b.rt.UnavailableServers(ctx, user)
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, d := range down {
		reasons[d.Server] = d.Reason
	}
	return byName(tools), reasons
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

	// Discovery without a caller never reaches the server, nor the token
	// endpoint: the server's tools are listed per signed-in user. A caller
	// with a static token does not see them and is told why.
	tools, down := b.listAsUser(t, "u1", "")
	require.NotContains(t, tools, "s_headers")
	require.Equal(t, "its credential is exchanged per caller (RFC 8693): its tools are listed for callers signed in with the identity provider only", down["s"])
	require.Empty(t, up.dials())
	require.Empty(t, up.of("tools/list"))
	require.Zero(t, tok.count())

	// A signed-in caller's call lists the server on the user's own session
	// and calls it there, with the exchanged token, in the OAuth layer over
	// the static header, under the static spelling.
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	h := up.lastCall(t)
	require.Equal(t, "Bearer exchanged-1", one(t, h, "Authorization"))
	require.Equal(t, "kept", one(t, h, "X-Static"))
	require.Equal(t, 1, tok.count())
	require.Len(t, up.of("tools/list"), 1)
	for _, r := range append(up.dials(), up.of("tools/list")...) {
		require.Equal(t, "Bearer exchanged-1", one(t, r.headers, "Authorization"), "the session's own requests carry the caller's exchanged token")
		require.Equal(t, "kept", one(t, r.headers, "X-Static"))
	}
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

	require.Len(t, up.of("tools/list"), 1, "the user's listing is kept")

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
	_, err = b.rt.Call(credential.WithSecrets(ctx, nil), b.server(t, "s"), "headers", "u1", "t1", map[string]any{})
	var ce *credential.CredentialError
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

// SSE works the same: the user's session is dialled and listed with the
// exchanged token, each call carries a fresh one when it is due. A token
// type of "N_A" (RFC 8693 §2.2.1) means default_token_type.
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
	require.Equal(t, 2, tok.count(), "the listing's exchange, then the call's")
	require.Equal(t, "Bearer exchanged-2", one(t, up.lastCall(t), "Authorization"))
	res, err = b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Equal(t, 3, tok.count(), "an expires_in given as a string is read too: 30 s is within the 60 s refresh skew")
	require.Equal(t, "Bearer exchanged-3", one(t, up.lastCall(t), "Authorization"))
	f := tok.form(0)
	require.Empty(t, f.Get("client_id"), "client authentication is optional")
	require.Empty(t, f.Get("client_secret"))
	require.Empty(t, f.Get("scope"))
	require.Equal(t, "https://mcp.example", f.Get("audience"))
	require.NotEmpty(t, up.of("initialize"))
	for _, r := range append(up.dials(), up.of("tools/list")...) {
		require.Equal(t, "Bearer exchanged-1", one(t, r.headers, "Authorization"), r.method)
	}
	requireNoCallerToken(t, up, b)
}

// A refusal by the token endpoint is a tool error naming the server and
// the endpoint's error code, never the tokens, the client secret or the
// error description; it is not cached (the user's listing is tried again
// once the discovery backoff, here a nanosecond, passed). An endpoint that
// is down makes the server unavailable to the caller; so does one
// answering the caller's own token, which is refused.
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
	retryAtOnce := func(o *mcpclient.Options) { o.DiscoveryRetry = time.Nanosecond }
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, nil)}}}, retryAtOnce)
	b.list(t)
	before := len(up.calls())
	for i := 1; i <= 2; i++ {
		res, err := b.callAsCaller(callerA, "s_headers")
		require.NoError(t, err, "a refused exchange is a tool error")
		msg := errorText(t, res)
		require.Equal(t, "MCP server 's' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP 400, error 'invalid_grant'.", msg)
		require.Equal(t, i, tok.count(), "a failure is not cached")
	}
	_, down := b.listAsUser(t, "u1", callerA)
	require.Equal(t, "tool discovery failed: MCP server 's' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP 400, error 'invalid_grant'.", down["s"])
	require.Len(t, up.calls(), before, "nothing reached the server")
	require.Empty(t, up.dials(), "nothing reached the server")

	// An error code that is free text is left out.
	mu.Lock()
	reply = func(int, url.Values) (int, map[string]any) {
		return 401, map[string]any{"error": "bad token " + callerA}
	}
	mu.Unlock()
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.Equal(t, "MCP server 's' could not get a credential for this call: the token endpoint refused the token exchange (RFC 8693) with HTTP 401.", errorText(t, res))

	// A token endpoint that is down makes the server unavailable (503).
	mu.Lock()
	reply = func(int, url.Values) (int, map[string]any) {
		return 503, map[string]any{"error": "temporarily_unavailable"}
	}
	mu.Unlock()
	_, err = b.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUnavailable)
	require.Equal(t, "MCP server 's' is unavailable (tool discovery failed: MCP server 's' token exchange (RFC 8693) failed: the token endpoint answered HTTP 503); it is retried at your next call or listing", mcpflow.ErrorMessage(err))

	// An answer that is the caller's own token is never passed through.
	mu.Lock()
	reply = func(_ int, f url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": f.Get("subject_token"), "token_type": "Bearer", "expires_in": 3600}
	}
	mu.Unlock()
	_, err = b.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUnavailable)
	require.Contains(t, mcpflow.ErrorMessage(err), "MCP server 's' token exchange (RFC 8693) failed: the token endpoint answered with the caller's own token, which is never passed through")

	// An unreachable token endpoint.
	b2 := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url,
		"oauth": exchangeBlock("http://127.0.0.1:1/token", nil)}}}, retryAtOnce)
	_, err = b2.callAsCaller(callerA, "s_headers")
	requireCode(t, err, mcpflow.EUnavailable)
	require.Contains(t, mcpflow.ErrorMessage(err), "MCP server 's' token exchange (RFC 8693) failed: the token request failed")

	// Once the endpoint answers again, the user's next call lists the
	// server and goes through.
	mu.Lock()
	reply = exchangeReply
	mu.Unlock()
	res, err = b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Len(t, up.calls(), before+1)

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
	// The user's listing, signed in with another token (exchanged-1).
	tools, _ := b.listAsUser(t, "u1", callerB)
	require.Contains(t, tools, "s_headers")
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
		return goroutinesIn("credential.(*tokenExchanges).header(") == callers && tok.count() == 2
	}, generous, 5*time.Millisecond, "every caller waits for the one exchange")
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 2, tok.count(), "20 concurrent calls of one caller made one exchange")
	for _, c := range up.calls() {
		require.Equal(t, "Bearer exchanged-2", c.Headers.Get("Authorization"))
	}

	// A 30 s token with a 60 s skew is due as soon as it arrives.
	short := newTokenEndpoint(t, func(n int, _ url.Values) (int, map[string]any) {
		return 200, map[string]any{"access_token": fmt.Sprintf("short-%d", n), "token_type": "Bearer", "expires_in": 30}
	})
	// The edited block lists the server again for the user (short-1), and
	// each call exchanges anew.
	b.write(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(short.URL, nil)}}})
	b.settle()
	for i := 2; i <= 3; i++ {
		res, err := b.callAsCaller(callerA, "s_headers")
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res)
		require.Equal(t, fmt.Sprintf("Bearer short-%d", i), one(t, up.lastCall(t), "Authorization"))
	}
	require.Equal(t, 3, short.count())

	// The same endpoint with another audience: a fresh exchange.
	b.write(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, doc{"audience": "https://other"})}}})
	b.settle()
	res, err := b.callAsCaller(callerA, "s_headers")
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Equal(t, "Bearer exchanged-3", one(t, up.lastCall(t), "Authorization"))
	require.Equal(t, 3, tok.count(), "the listing's exchange serves the call")
	require.Equal(t, "https://other", tok.form(2).Get("audience"))
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

// Each user signed in with the identity provider has a session of their
// own with a token-exchange server, and every request on it (the dial,
// discovery's tools/list, the calls) carries the token the provider
// exchanged for that user: alice's and bob's sessions never mix, and the
// server is never reached without a caller. Real exchanges at the test
// OpenID provider; the upstream records each request's token and session.
func TestTokenExchangeSessionsPerUser(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{config.TransportHTTP, config.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			const (
				host     = "mcp-host"
				exchange = "gw-exchange"
				secret   = "gw-exchange-secret"
				audience = "https://upstream.example/mcp"
			)
			idp := testidp.Start(t, testidp.Options{})
			idp.RegisterClient(testidp.Client{ID: host, RedirectURIs: []string{"http://127.0.0.1/callback"}})
			idp.RegisterClient(testidp.Client{ID: exchange, Secret: secret, GrantTypes: []string{testidp.GrantTokenExchange}})
			callers := map[string]string{} // user → the access token they signed in with
			for _, u := range []string{testidp.Alice, testidp.Bob} {
				callers[u] = idp.LoginAs(t, u, host, "http://127.0.0.1/callback", "https://mcpflow.example")
			}
			up := newCredUpstream(t, transport)
			b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": transport, "url": up.url,
				"oauth": doc{"grant_type": "token_exchange", "token_url": idp.Issuer() + "/oauth/token",
					"client_id": exchange, "client_secret": secret, "audience": audience}}}})

			// The process-wide discovery does not reach the server.
			b.list(t)
			require.Empty(t, up.dials())

			for _, u := range []string{testidp.Alice, testidp.Bob} {
				tools, down := b.listAsUser(t, u, callers[u])
				require.Contains(t, tools, "s_headers", "%s: %v", u, down)
				res, err := b.callAsUser(u, callers[u], "s_headers")
				require.NoError(t, err)
				require.False(t, res.IsError, "%+v", res)
			}

			// subject is the user an upstream request's exchanged token
			// was issued for, after checking it is one of the provider's
			// exchanged tokens for the server's audience, never a
			// caller's own token.
			subject := func(h http.Header) string {
				t.Helper()
				tok, ok := strings.CutPrefix(one(t, h, "Authorization"), "Bearer ")
				require.True(t, ok)
				for _, c := range callers {
					require.NotEqual(t, c, tok, "a caller's own token went upstream")
				}
				_, claims := testidp.Decode(t, tok)
				require.Contains(t, claims["aud"], audience)
				sub, _ := claims["sub"].(string)
				return sub
			}
			dials := map[string]int{}
			for _, r := range up.dials() {
				dials[subject(r.headers)]++
			}
			require.Equal(t, map[string]int{testidp.Alice: 1, testidp.Bob: 1}, dials, "one session per user, each opened with that user's token")
			lists := map[string]int{}
			sessions := map[string]string{} // upstream session id → the user whose token it carried
			up.mu.Lock()
			recorded := append([]credRequest(nil), up.requests...)
			up.mu.Unlock()
			for _, r := range recorded {
				sub := subject(r.headers) // every request, the GET stream and notifications too
				if r.method == "tools/list" {
					lists[sub]++
				}
				if r.session == "" {
					continue
				}
				if prev, ok := sessions[r.session]; ok {
					require.Equal(t, prev, sub, "session %s carried two users' tokens", r.session)
				}
				sessions[r.session] = sub
			}
			require.Equal(t, map[string]int{testidp.Alice: 1, testidp.Bob: 1}, lists, "each user's tools listed with that user's token")
			if transport == config.TransportSSE { // (over HTTP the demo server speaks 2026-07-28: no session ids)
				require.Len(t, sessions, 2, "one upstream session per user")
			}
			calls := up.calls()
			require.Len(t, calls, 2)
			require.Equal(t, testidp.Alice, subject(calls[0].Headers))
			require.Equal(t, testidp.Bob, subject(calls[1].Headers))
		})
	}
}

// The users' sessions of token-exchange servers a process holds open are
// bounded (MaxCallerSessions): beyond it the least recently used one is
// closed, and its user's next call opens a new one.
func TestTokenExchangeSessionBound(t *testing.T) {
	t.Parallel()
	up := newCredUpstream(t, config.TransportHTTP)
	tok := newTokenEndpoint(t, exchangeReply)
	b := newRuntime(t, doc{"mcpServers": doc{"s": doc{"type": "http", "url": up.url, "oauth": exchangeBlock(tok.URL, nil)}}},
		func(o *mcpclient.Options) { o.MaxCallerSessions = 2 })
	call := func(user, caller string) {
		t.Helper()
		res, err := b.callAsUser(user, caller, "s_headers")
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res)
	}
	call("u1", callerA)
	call("u2", callerB)
	call("u1", callerA)
	require.Len(t, up.dials(), 2, "two users, two sessions")
	call("u3", "caller-token-CCCC")
	require.Len(t, up.dials(), 3)
	call("u1", callerA)
	require.Len(t, up.dials(), 3, "u1's session was used last but one: kept")
	call("u2", callerB)
	require.Len(t, up.dials(), 4, "u2's session was the least recently used: closed, and dialled again")
	requireNoCallerToken(t, up, b)
}
