package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/api"
	"github.com/mcpflow/mcpflow/mcpclient"
	"github.com/mcpflow/mcpflow/mcpserver"
	"github.com/mcpflow/mcpflow/store"
)

// echoTools answers every call at once: the benchmark measures the API's
// own work per call, not an upstream.
type echoTools struct{}

func (echoTools) ListTools(context.Context, string, string) ([]mcpflow.Tool, error) { return nil, nil }
func (echoTools) CallTool(_ context.Context, c mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	args, _ := c.CallArguments()
	text, _ := json.Marshal(map[string]any{"type": "text", "text": args["message"]})
	return &mcpflow.ToolResult{Content: []json.RawMessage{text}}, nil
}
func (echoTools) UnavailableServers(context.Context, string) ([]mcpflow.UnavailableServer, error) {
	return nil, nil
}
func (echoTools) RoutingHints([]mcpflow.Tool) string { return "" }
func (echoTools) ResetCache()                        {}

// BenchmarkToolCallHandler compares the handler work of one tool call
// through the REST route and through the MCP endpoint (the same runtime
// stand-in, no network), side by side: go test -bench ToolCallHandler
// -benchmem ./api/. The latency of a real call is dominated by wake-ups
// (bench/mcpbench); this is the CPU and allocations mcpflow adds.
func BenchmarkToolCallHandler(b *testing.B) {
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(b.TempDir(), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	auth, _ := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}}})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: echoTools{}, Logger: quiet,
		MCP: mcpserver.New(mcpserver.Options{Tools: echoTools{}, Sessions: db, Events: db, Logger: quiet})})
	h := srv.Handler()
	do := func(path, session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+aliceToken)
		r.Header.Set("Content-Type", "application/json")
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := do("/mcp/threads/bench", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	session := init.Header().Get("Mcp-Session-Id")
	if session == "" {
		b.Fatal(init.Body.String())
	}
	b.Run("rest", func(b *testing.B) {
		for b.Loop() {
			if w := do("/api/threads/bench/tools/echo/call", "", `{"arguments":{"message":"hello"}}`); w.Code != 200 {
				b.Fatal(w.Body.String())
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		for b.Loop() {
			if w := do("/mcp/threads/bench", session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`); w.Code != 200 {
				b.Fatal(w.Body.String())
			}
		}
	})
}

// BenchmarkToolCallHTTPUpstream is one REST tool call through the whole
// of mcpflow (API, runtime, mcp-go client) to the demo server over
// streamable HTTP, which runs as its own process, by 1 caller and by 16
// concurrent ones: the allocations, bytes and CPU time it reports are
// mcpflow's alone. cpu-µs/op is the user and system time of this process
// per call, which other load on the machine inflates far less than ns/op
// (go test -bench ToolCallHTTPUpstream -benchmem ./api/; add -cpuprofile to
// see where the CPU goes).
func BenchmarkToolCallHTTPUpstream(b *testing.B) {
	url, _ := startDemoHTTP(b, "http")
	tb := setupTools(b, map[string]any{"mcpServers": map[string]any{"demo": map[string]any{"type": "http", "url": url}}})
	h := tb.srv.Handler()
	call := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/api/threads/bench/tools/demo_echo/call", strings.NewReader(`{"arguments":{"message":"hello"}}`))
		r.Header.Set("Authorization", "Bearer "+aliceToken)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := call(); w.Code != 200 { // discovery and the session's start
		b.Fatal(w.Body.String())
	}
	reportCPU := func(b *testing.B, start time.Duration) {
		if used := processCPU() - start; used > 0 {
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
	b.Run("callers=1", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			if w := call(); w.Code != 200 {
				b.Fatal(w.Body.String())
			}
		}
		reportCPU(b, cpu)
	})
	b.Run("callers=16", func(b *testing.B) {
		b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		cpu := processCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if w := call(); w.Code != 200 {
					b.Error(w.Body.String())
					return
				}
			}
		})
		reportCPU(b, cpu)
	})
}

// BenchmarkMCPToolCallUpstream is one MCP tools/call through the whole of
// mcpflow's edge (API middleware, the MCP endpoint, the runtime, mcp-go's
// client) to the demo server over streamable HTTP, which runs as its own
// process: a 2025-11-25 client on a session and a stateless 2026-07-28
// client, side by side. allocs/op and cpu-µs/op are mcpflow's alone
// (go test -run XXX -bench MCPToolCallUpstream -benchmem ./api/; add
// -cpuprofile to see where the CPU goes).
func BenchmarkMCPToolCallUpstream(b *testing.B) {
	url, _ := startDemoHTTP(b, "http")
	dir := b.TempDir()
	db, err := store.Open(context.Background(), store.BackendSQLite, filepath.Join(dir, "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	ext, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"demo": map[string]any{"type": "http", "url": url}}})
	path := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(path, ext, 0o600); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := mcpclient.NewRuntime(mcpclient.Options{ExtensionsPath: path, WorkspaceRoot: filepath.Join(dir, "workspace"), Logger: quiet})
	b.Cleanup(func() { _ = rt.Close() })
	auth, _ := api.NewAuthenticator(api.AuthConfig{Users: []api.UserToken{{UserID: "alice", Token: aliceToken}}})
	srv := api.New(api.Options{Auth: auth, Threads: db, Tools: rt, Logger: quiet,
		MCP: mcpserver.New(mcpserver.Options{Tools: rt, Sessions: db, Events: db, Logger: quiet})})
	h := srv.Handler()
	do := func(headers map[string]string, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp/threads/bench", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+aliceToken)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := do(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}`)
	session := init.Header().Get("Mcp-Session-Id")
	if session == "" {
		b.Fatal(init.Body.String())
	}
	legacy := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
	legacyBody := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hello"}}}`
	modern := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "demo_echo"}
	modernBody := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo_echo","arguments":{"message":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`
	for _, c := range []struct {
		name    string
		headers map[string]string
		body    string
	}{{"2025-11-25", legacy, legacyBody}, {"2026-07-28", modern, modernBody}} {
		if w := do(c.headers, c.body); w.Code != 200 || !strings.Contains(w.Body.String(), `"text":"hello"`) { // discovery, the upstream session
			b.Fatal(c.name, w.Code, w.Body.String())
		}
		b.Run(c.name, func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				if w := do(c.headers, c.body); w.Code != 200 {
					b.Fatal(w.Body.String())
				}
			}
			if used := processCPU() - cpu; used > 0 {
				b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/op")
			}
		})
	}
}
