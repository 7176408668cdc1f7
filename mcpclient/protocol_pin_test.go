package mcpclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// wireLog records what reaches an MCP server over streamable HTTP: the
// server/discover probes and the MCP-Protocol-Version of each tools/call.
type wireLog struct {
	mu        sync.Mutex
	discovers int
	calls     []string
}

func (l *wireLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		l.mu.Lock()
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			l.discovers++
		}
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			l.calls = append(l.calls, r.Header.Get("Mcp-Protocol-Version"))
		}
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *wireLog) seen() (discovers int, calls []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.discovers, append([]string(nil), l.calls...)
}

// TestProtocolVersionPin pins a server's revision with protocol_version:
// the demo server offers 2026-07-28 and 2025-11-25; pinned to 2025-11-25
// mcpflow speaks 2025-11-25 to it without a server/discover probe, over
// streamable HTTP and stdio, and unpinned it speaks 2026-07-28.
func TestProtocolVersionPin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, pin, want string
		probes          bool
	}{
		{"pinned", config.ProtocolVersion20251125, "2025-11-25", false},
		{"pinned 2026", config.ProtocolVersion20260728, "2026-07-28", true},
		{"newest offered", "", "2026-07-28", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var wire wireLog
			url, _ := testenv.DemoInProcess(t, config.TransportHTTP, wire.wrap)
			pin := doc{}
			if tc.pin != "" {
				pin["protocol_version"] = tc.pin
			}
			remote := doc{"type": "http", "url": url}
			maps.Copy(remote, pin)
			b := newRuntime(t, doc{"mcpServers": doc{"demo": remote, "local": stdioDemo(t, pin)}})
			require.Equal(t, "a", text(t, b.call(t, "demo_echo", map[string]any{"message": "a"})))
			discovers, calls := wire.seen()
			require.Equal(t, []string{tc.want}, calls)
			if tc.probes {
				require.NotZero(t, discovers)
			} else {
				require.Zero(t, discovers, "a pinned 2025-11-25 session does not probe server/discover")
			}

			require.Equal(t, "b", text(t, b.call(t, "local_echo", map[string]any{"message": "b"})))
			none := func(context.Context) (*session.Session, error) { return nil, errors.New("no pooled session") }
			sess, err := b.rt.Pool().Session(context.Background(), session.PoolKey{Server: "local", Scope: "alice:t1"}, none)
			require.NoError(t, err)
			require.Equal(t, tc.want, sess.Protocol(), "the stdio session")
		})
	}
}

// A server that does not speak its pinned revision is not used in another
// one: pinned to 2026-07-28, a 2025-11-25-only server fails to connect,
// and the reason names protocol_version.
func TestProtocolVersionPinRefused(t *testing.T) {
	t.Parallel()
	url, _ := testenv.DemoInProcess(t, config.TransportHTTP, legacyOnly)
	b := newRuntime(t, doc{"mcpServers": doc{"demo": doc{"type": "http", "url": url, "protocol_version": "2026-07-28"}}})
	_, err := b.tryCall("demo_echo", map[string]any{"message": "a"})
	requireCode(t, err, mcpflow.EUnavailable)
	require.ErrorContains(t, err, "MCP server 'demo' answered in protocol revision 2025-11-25, not 2026-07-28, which its protocol_version pins")
}
