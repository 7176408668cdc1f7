package mcpclient_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient"
)

// Servers whose discovery failed heal by themselves: they are retried
// with a capped backoff, their tools come back without an admin, and
// while they are down a call of one of their tools answers 503 naming the
// server instead of 404.

// retryAtOnce makes every failed server due for a retry at once.
func retryAtOnce(o *mcpclient.Options) {
	o.DiscoveryRetry = time.Nanosecond
	o.DiscoveryRetryMax = time.Nanosecond
}

// retryHourly makes a failed server wait an hour before its next retry.
func retryHourly(o *mcpclient.Options) {
	o.DiscoveryRetry = time.Hour
	o.DiscoveryRetryMax = time.Hour
}

func (b *rtBundle) tryCall(tool string, args map[string]any) (*mcpflow.ToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	return b.rt.CallTool(ctx, mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: tool, Arguments: args})
}

func (b *rtBundle) unavailable(t *testing.T) map[string]string {
	t.Helper()
	list, err := b.rt.UnavailableServers(context.Background(), "alice")
	require.NoError(t, err)
	out := map[string]string{}
	for _, u := range list {
		out[u.Server] = u.Reason
	}
	return out
}

// TestRuntimeHealsServerThatWasDown pins the reported case: an SSE/HTTP
// server that was down when tools were first listed is named in the
// listing, a call of its tool answers 503 naming it, and once it is up
// its tools are back without a cache reset.
func TestRuntimeHealsServerThatWasDown(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			addr := testenv.FreeAddr(t)
			url := "http://" + addr + demomcp.StreamableHTTPPath + "?token=s3cret-query"
			if transport == "sse" {
				url = "http://" + addr + demomcp.SSEPath
			}
			b := newRuntime(t, doc{"mcpServers": doc{
				"demo":  doc{"type": transport, "url": url, "headers": doc{"Authorization": "Bearer s3cret-header"}},
				"local": stdioDemo(t, nil),
			}}, retryAtOnce)
			require.Len(t, b.list(t), len(demoTools), "only the local server's tools")
			reasons := b.unavailable(t)
			require.Len(t, reasons, 1)
			require.Contains(t, reasons["demo"], "tool discovery failed")

			_, err := b.tryCall("demo_echo", map[string]any{"message": "down"})
			requireCode(t, err, mcpflow.EUnavailable)
			msg := mcpflow.ErrorMessage(err)
			require.Contains(t, msg, "MCP server 'demo' is unavailable")
			for _, s := range []string{reasons["demo"], msg} {
				require.NotContains(t, s, "s3cret")
				require.NotContains(t, s, addr, "no connection internals")
			}

			startDemoHTTPAt(t, transport, addr)
			require.Equal(t, "back", text(t, b.call(t, "demo_echo", map[string]any{"message": "back"})))
			require.Contains(t, names(b.list(t)), "demo_echo")
			require.Len(t, b.list(t), 2*len(demoTools))
			require.Empty(t, b.unavailable(t))
		})
	}
}

// TestRuntimeKnownToolsOfDownServer pins that the last good tool list of a
// server that went down answers its calls with 503 (other names stay 404),
// that its retries follow the backoff, and that a cache reset retries at
// once.
func TestRuntimeKnownToolsOfDownServer(t *testing.T) {
	t.Parallel()
	addr := testenv.FreeAddr(t)
	url, stop := startDemoHTTPAt(t, "http", addr)
	b := newRuntime(t, doc{"mcpServers": doc{"demo": doc{"type": "http", "url": url, "tool_name_prefix": false}}}, retryHourly)
	require.Equal(t, "up", text(t, b.call(t, "echo", map[string]any{"message": "up"})))

	stop(true)
	b.rt.ResetCache() // rediscovers while the server is down
	require.Empty(t, b.list(t))
	require.Contains(t, b.unavailable(t), "demo")
	_, err := b.tryCall("echo", map[string]any{"message": "down"})
	requireCode(t, err, mcpflow.EUnavailable)
	require.Contains(t, mcpflow.ErrorMessage(err), "MCP server 'demo' is unavailable")
	_, err = b.tryCall("no_such_tool", nil)
	requireCode(t, err, mcpflow.ENotFound)

	startDemoHTTPAt(t, "http", addr)
	_, err = b.tryCall("echo", map[string]any{"message": "early"})
	requireCode(t, err, mcpflow.EUnavailable) // the next retry is an hour away

	b.rt.ResetCache()
	require.Equal(t, "back", text(t, b.call(t, "echo", map[string]any{"message": "back"})))
	require.Empty(t, b.unavailable(t))
}

// TestRuntimeConfiguredToolsOfDownServer pins that a server never reached
// still owns the tools its configuration names (and, with the prefix, the
// names "<server>_..."): their calls answer 503, other names 404.
func TestRuntimeConfiguredToolsOfDownServer(t *testing.T) {
	t.Parallel()
	down := "http://" + testenv.FreeAddr(t) + "/mcp"
	b := newRuntime(t, doc{"mcpServers": doc{
		"bare":  doc{"type": "http", "url": down, "tool_name_prefix": false, "tools": doc{"alpha": doc{"routing": doc{"mode": "prefer", "keywords": []string{"a"}}}}},
		"named": doc{"type": "http", "url": down},
	}}, retryHourly)
	require.Empty(t, b.list(t))
	require.Len(t, b.unavailable(t), 2)
	for tool, server := range map[string]string{"alpha": "bare", "named_anything": "named"} {
		_, err := b.tryCall(tool, nil)
		requireCode(t, err, mcpflow.EUnavailable)
		require.Contains(t, mcpflow.ErrorMessage(err), "MCP server '"+server+"' is unavailable")
	}
	_, err := b.tryCall("beta", nil)
	requireCode(t, err, mcpflow.ENotFound)
}

// TestRuntimeDiscoveryWithoutInitTimeoutIsBounded pins that the discovery
// of a server whose session_init_timeout is null gives up after the
// discovery bound instead of holding every listing forever, and that the
// server is retried.
func TestRuntimeDiscoveryWithoutInitTimeoutIsBounded(t *testing.T) {
	t.Parallel()
	var held atomic.Bool
	stop := make(chan struct{})
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if opensSession(body) && held.CompareAndSwap(false, true) {
				select { // the first initialize is never answered
				case <-r.Context().Done():
				case <-stop:
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(func() { close(stop) })
	b := newRuntime(t, doc{"mcpServers": doc{
		"demo":  doc{"type": "http", "url": url, "session_init_timeout": nil},
		"local": stdioDemo(t, nil),
	}}, retryAtOnce, func(o *mcpclient.Options) { o.DiscoveryTimeout = 200 * time.Millisecond })
	require.Len(t, b.list(t), len(demoTools), "the listing does not wait forever")
	require.Contains(t, b.unavailable(t)["demo"], "timed out")
	require.Equal(t, "ok", text(t, b.call(t, "demo_echo", map[string]any{"message": "ok"})))
}
