package session

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// reviewRecorder is a transport that keeps the requests it is given and
// answers each with an empty result.
type reviewRecorder struct{ reqs []transport.JSONRPCRequest }

func (r *reviewRecorder) Start(context.Context) error { return nil }
func (r *reviewRecorder) SendRequest(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	r.reqs = append(r.reqs, req)
	return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: json.RawMessage(`{"content":[]}`)}, nil
}
func (r *reviewRecorder) SendNotification(context.Context, mcp.JSONRPCNotification) error { return nil }
func (r *reviewRecorder) SetNotificationHandler(func(mcp.JSONRPCNotification))            {}
func (r *reviewRecorder) Close() error                                                    { return nil }
func (r *reviewRecorder) GetSessionId() string                                            { return "" }

// TestModernHeadersOverHTTPOnly: a 2026-07-28 request of a session
// without a process (streamable HTTP) carries Mcp-Method, Mcp-Name and a
// bound tool's Mcp-Param-*; one of a stdio session carries no header; the
// params sent are the same bytes either way.
func TestModernHeadersOverHTTPOnly(t *testing.T) {
	tool := mcp.NewToolWithRawSchema("region_call", "bound", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`))
	params := func() any {
		return mcp.CallToolParams{Name: "region_call", Arguments: map[string]any{"region": "eu-west"}}
	}
	var sent []transport.JSONRPCRequest
	for _, proc := range []*sessProc{nil, {}} {
		rec := &reviewRecorder{}
		s := &Session{version: mcp.ProtocolVersion20260728, info: mcp.Implementation{Name: "mcpflow", Version: "t"},
			clientCaps: map[string]any{}, proc: proc, tools: map[string]mcp.Tool{"region_call": tool},
			client: client.NewClient(rec)}
		_, rpc, err := s.rawRequest(context.Background(), mcp.MethodToolsCall, "region_call", params())
		require.NoError(t, err)
		require.Nil(t, rpc)
		_, _, err = s.rawRequest(context.Background(), mcp.MethodTasksGet, "task-1", map[string]any{"taskId": "task-1"})
		require.NoError(t, err)
		require.Len(t, rec.reqs, 2)
		sent = append(sent, rec.reqs...)
	}
	httpCall, httpTask, stdioCall, stdioTask := sent[0], sent[1], sent[2], sent[3]
	require.Equal(t, "tools/call", httpCall.Header.Get(mcp.HeaderMethod))
	require.Equal(t, "region_call", httpCall.Header.Get(mcp.HeaderName))
	require.Equal(t, "eu-west", httpCall.Header.Get(mcp.HeaderParamPrefix+"Region"))
	require.Equal(t, "tasks/get", httpTask.Header.Get(mcp.HeaderMethod))
	require.Equal(t, "task-1", httpTask.Header.Get(mcp.HeaderName))
	require.Equal(t, http.Header(nil), stdioCall.Header)
	require.Equal(t, http.Header(nil), stdioTask.Header)
	require.Equal(t, string(httpCall.Params.(json.RawMessage)), string(stdioCall.Params.(json.RawMessage)))
	require.Equal(t, string(httpTask.Params.(json.RawMessage)), string(stdioTask.Params.(json.RawMessage)))
}
