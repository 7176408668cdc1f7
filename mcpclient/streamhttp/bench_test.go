package streamhttp_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// BenchmarkEcho compares mcp-go's StreamableHTTP and this package's
// Transport side by side on a tools/call echo round trip to the demo
// server in its own process (so allocs/op are the client's only), on a
// 2025-11-25 session (JSON answers):
//   - request: transport.SendRequest with typed params, as mcpflow's
//     sessions send (Session.rawRequest);
//   - client: mcp-go's client.CallTool over the transport;
//   - raw (ours only): SendRaw of bytes built once.
//
// Run: go test ./mcpclient/streamhttp -run '^$' -bench Echo -benchmem
func BenchmarkEcho(b *testing.B) {
	demo := testenv.StartDemo(b, demomcp.TransportHTTP)
	transports := []struct {
		name string
		new  func() (transport.Interface, error)
	}{
		{"mcp-go", func() (transport.Interface, error) {
			return transport.NewStreamableHTTP(demo.URL, transport.WithHTTPBasicClient(testHTTP))
		}},
		{"streamhttp", func() (transport.Interface, error) {
			return streamhttp.New(demo.URL, streamhttp.Options{HTTPClient: testHTTP})
		}},
	}
	ctx := context.Background()
	for _, tc := range transports {
		tr, err := tc.new()
		if err != nil {
			b.Fatal(err)
		}
		c := client.NewClient(tr)
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = legacy
		if _, err := c.Initialize(ctx, init); err != nil {
			b.Fatal(err)
		}
		params := mcp.CallToolParams{Name: demomcp.ToolEcho, Arguments: map[string]any{"message": "hello"}}
		b.Run(tc.name+"/request", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
					ID: mcp.NewRequestId("bench-" + strconv.Itoa(n)), Method: string(mcp.MethodToolsCall), Params: params})
				if err != nil || resp.Error != nil || len(resp.Result) == 0 {
					b.Fatal(err, resp)
				}
			}
		})
		b.Run(tc.name+"/client", func(b *testing.B) {
			b.ReportAllocs()
			req := mcp.CallToolRequest{Params: params}
			for b.Loop() {
				if _, err := c.CallTool(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		if raw, ok := tr.(*streamhttp.Transport); ok {
			body := []byte(`{"jsonrpc":"2.0","id":"bench","method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
			b.Run(tc.name+"/raw", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, rpc, err := raw.SendRaw(ctx, "tools/call", body, nil)
					if err != nil || rpc != nil || len(res) == 0 {
						b.Fatal(err, rpc)
					}
				}
			})
		}
		_ = c.Close()
	}
}
