package mcpclient_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
)

// Demo servers and bounds the runtime's tests share with the session's
// (mcpclient/session's session_test.go has the same helpers).

// sessWait bounds waits that normally take well under a second; it is never
// a performance assertion.
const sessWait = 30 * time.Second

func sessCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), sessWait)
	t.Cleanup(cancel)
	return ctx
}

// sessEndpoint is the MCP endpoint of a demo base URL.
func sessEndpoint(base, transport string) string {
	if transport == config.TransportSSE {
		return base + demomcp.SSEPath
	}
	return base + demomcp.StreamableHTTPPath
}

// legacyOnly makes an MCP server a 2025-11-25 one for the client: its
// server/discover probe is answered -32601, so the session initializes.
// For tests of what 2025-11-25 sessions do (Mcp-Session-Id, DELETE).
func legacyOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// opensSession reports whether a request body is the first request of a
// session's dial: the 2026-07-28 server/discover probe, or a 2025-11-25
// initialize.
func opensSession(body []byte) bool {
	return bytes.Contains(body, []byte(`"server/discover"`)) || bytes.Contains(body, []byte(`"initialize"`))
}

// poolSent returns a context whose tool call closes sent right before it
// is sent to the server: from then on the call is in flight.
func poolSent(ctx context.Context) (context.Context, <-chan struct{}) {
	sent := make(chan struct{})
	var once sync.Once
	return mcpflow.WithBeforeSend(ctx, func(context.Context) error {
		once.Do(func() { close(sent) })
		return nil
	}), sent
}

// poolAwait waits for sent, failing the test with the call's outcome if
// the call ends first.
func poolAwait(t *testing.T, sent <-chan struct{}, errc <-chan error) {
	t.Helper()
	select {
	case <-sent:
	case err := <-errc:
		t.Fatalf("the call ended before it was sent: %v", err)
	case <-time.After(sessWait):
		t.Fatal("the call was never sent")
	}
}
