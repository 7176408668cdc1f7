package mcpclient_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestReferenceServer runs discovery, prefixing and calls (text,
// structured content, resource links, errors) against the reference server
// @modelcontextprotocol/server-everything over stdio and streamable HTTP.
func TestReferenceServer(t *testing.T) {
	t.Parallel()
	entry := testenv.EverythingEntry(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var srv doc
			if transport == "stdio" {
				srv = doc{"type": "stdio", "command": "node", "args": []string{entry, "stdio"}}
			} else {
				srv = doc{"type": "http", "url": testenv.StartEverythingHTTP(t, entry)}
			}
			raw := doc{"tool_name_prefix": false}
			for k, v := range srv {
				raw[k] = v
			}
			b := newRuntime(t, doc{"mcpServers": doc{"everything": srv, "ref": raw}})

			tools := byName(b.list(t))
			for _, name := range []string{"echo", "get-sum", "get-structured-content", "get-resource-links", "get-env"} {
				p, ok := tools["everything_"+name]
				if !ok { // (seen once under a loaded run: every server's discovery failed)
					logs := b.logs.String()
					t.Fatalf("everything_%s is listed; got %v; the runtime's log ends:\n%s", name, names(b.list(t)), logs[max(0, len(logs)-4000):])
				}
				require.Equal(t, "everything", p.Server)
				require.Equal(t, name, p.OriginalName)
				u, ok := tools[name]
				require.True(t, ok, "%s is listed unprefixed", name)
				require.Equal(t, "ref", u.Server)
			}
			require.Equal(t, "Echoes back the input string", tools["everything_echo"].Description)
			var schema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(tools["everything_get-sum"].InputSchema, &schema))
			require.Contains(t, schema.Properties, "a")
			require.Contains(t, schema.Properties, "b")
			for _, tl := range tools {
				require.Regexp(t, `^[A-Za-z0-9_-]+$`, tl.Name)
			}

			// Text.
			require.Equal(t, "Echo: hi", text(t, b.call(t, "everything_echo", map[string]any{"message": "hi"})))
			require.Equal(t, "Echo: raw", text(t, b.call(t, "echo", map[string]any{"message": "raw"})))
			require.Equal(t, "The sum of 2 and 3 is 5.", text(t, b.call(t, "everything_get-sum", map[string]any{"a": 2, "b": 3})))

			// Structured content.
			res := b.call(t, "everything_get-structured-content", map[string]any{"location": "Chicago"})
			require.False(t, res.IsError)
			require.Equal(t, map[string]any{"temperature": json.Number("36"), "conditions": "Light rain / drizzle", "humidity": json.Number("82")}, res.StructuredContent)

			// Resource links: remote schemes are never translated.
			res = b.call(t, "everything_get-resource-links", map[string]any{"count": 2})
			require.False(t, res.IsError)
			bs := blocks(t, res)
			require.Len(t, bs, 3)
			require.Equal(t, "text", bs[0].Type)
			require.Equal(t, block{Type: "resource_link", URI: "demo://resource/dynamic/blob/1", Name: "Blob Resource 1", MIMEType: "text/plain"}, bs[1])
			require.Equal(t, "resource_link", bs[2].Type)
			require.Equal(t, "demo://resource/dynamic/text/2", bs[2].URI)

			// Invalid arguments are a tool error result, not a Go error.
			res = b.call(t, "everything_get-sum", map[string]any{"a": "x"})
			require.True(t, res.IsError)
			require.Contains(t, text(t, res), "Input validation error")

			if transport == "stdio" {
				// The reference server sees the thread's temp dir and none
				// of mcpflow's environment beyond PATH, HOME and LANG.
				res = b.call(t, "everything_get-env", nil)
				var env map[string]string
				require.NoError(t, json.Unmarshal([]byte(text(t, res)), &env))
				require.Equal(t, filepath.Join(b.threadWorkspace("alice", "t1"), ".mcp", "tmp"), env["TMPDIR"])
				for k := range env {
					require.False(t, strings.HasPrefix(k, "MCPFLOW_"), k)
				}
			}

			_, err := b.rt.CallTool(context.Background(), mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "everything_nope"})
			requireCode(t, err, mcpflow.ENotFound)
		})
	}
}

// TestReferenceServerWithHangingPeer pins that a peer that hangs in
// initialize is skipped after its timeout while the reference server's
// tools load.
func TestReferenceServerWithHangingPeer(t *testing.T) {
	t.Parallel()
	entry := testenv.EverythingEntry(t)
	b := newRuntime(t, doc{"mcpServers": doc{
		"hang":       doc{"type": "stdio", "command": "sleep", "args": []string{"300"}, "session_init_timeout": 1},
		"everything": doc{"type": "stdio", "command": "node", "args": []string{entry, "stdio"}},
	}})
	tools := byName(b.list(t))
	require.Contains(t, tools, "everything_echo")
	for _, tl := range tools {
		require.Equal(t, "everything", tl.Server)
	}
	skipped, err := b.rt.Skipped(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"hang": "Skipping MCP server 'hang' after tool discovery timed out (1.0s)"}, skipped)
	require.Equal(t, "Echo: ok", text(t, b.call(t, "everything_echo", map[string]any{"message": "ok"})))
}

// TestReferenceServerRestart pins that the runtime recovers when the
// reference server's streamable HTTP endpoint restarts: the old session id
// is refused with a plain 400 (not the 404 of the MCP spec), so only the
// first call after the restart fails and the next one reconnects.
func TestReferenceServerRestart(t *testing.T) {
	t.Parallel()
	entry := testenv.EverythingEntry(t)
	addr := testenv.FreeAddr(t)
	url, stop := testenv.StartEverythingHTTPAt(t, entry, addr)
	b := newRuntime(t, doc{"mcpServers": doc{"everything": doc{"type": "http", "url": url}}})
	require.Equal(t, "Echo: 1", text(t, b.call(t, "everything_echo", map[string]any{"message": "1"})))

	stop()
	testenv.StartEverythingHTTPAt(t, entry, addr)
	call := mcpflow.ToolCall{UserID: "alice", ThreadID: "t1", Tool: "everything_echo", Arguments: map[string]any{"message": "2"}}
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	res, err := b.rt.CallTool(ctx, call)
	if err != nil {
		requireCode(t, err, mcpflow.EUpstream)
		res, err = b.rt.CallTool(ctx, call)
	}
	require.NoError(t, err, "the runtime reconnects after a server restart")
	require.Equal(t, "Echo: 2", text(t, res))
}
