package stdiopipe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/stdiopipe"
)

// pipes connects a transport to a scripted server: the test reads what the
// transport wrote (lines) and writes the server's lines (out).
type pipes struct {
	tr    *stdiopipe.Transport
	lines *bufio.Scanner
	out   *io.PipeWriter
}

func newPipes(t *testing.T) *pipes {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	tr := stdiopipe.New(outR, inW, nil)
	require.NoError(t, tr.Start(context.Background()))
	t.Cleanup(func() { _ = outW.Close(); _ = tr.Close(); _ = inR.Close() })
	sc := bufio.NewScanner(inR)
	sc.Buffer(nil, 1<<20)
	return &pipes{tr: tr, lines: sc, out: outW}
}

// next reads the next line the transport wrote.
func (p *pipes) next(t *testing.T) map[string]any {
	t.Helper()
	require.True(t, p.lines.Scan(), "a line from the transport")
	var m map[string]any
	require.NoError(t, json.Unmarshal(p.lines.Bytes(), &m), p.lines.Text())
	return m
}

func (p *pipes) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.out, line+"\n")
	require.NoError(t, err)
}

type result struct {
	resp *transport.JSONRPCResponse
	err  error
}

func (p *pipes) request(ctx context.Context, id mcp.RequestId, params any) chan result {
	done := make(chan result, 1)
	go func() {
		resp, err := p.tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: params})
		done <- result{resp, err}
	}()
	return done
}

// A real MCP server (mcp-go's, over stdio) through mcp-go's client on the
// transport: initialize, list, and concurrent calls each get their own
// answer.
func TestAgainstMCPGoServer(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Echo: " + r.GetString("message", "")), nil
	})
	cOutR, sOutW := io.Pipe() // server stdout -> client
	sInR, cInW := io.Pipe()   // client -> server stdin
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = server.NewStdioServer(srv).Listen(ctx, sInR, sOutW)
	}()
	t.Cleanup(func() { cancel(); _ = sOutW.Close(); _ = sInR.Close(); <-served })

	c := client.NewClient(stdiopipe.New(cOutR, cInW, nil))
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	_, err := c.Initialize(ctx, init)
	require.NoError(t, err)
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				msg := fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("é\"\\", i))
				req := mcp.CallToolRequest{}
				req.Params.Name = "echo"
				req.Params.Arguments = map[string]any{"message": msg}
				res, err := c.CallTool(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if got := res.Content[0].(mcp.TextContent).Text; got != "Echo: "+msg {
					errs <- fmt.Errorf("caller %d got %q", g, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// Params already encoded are sent as they are; answers are matched by id
// however the server spells it, and skipped lines change nothing.
func TestRequestsAndAnswers(t *testing.T) {
	p := newPipes(t)
	ctx := context.Background()
	a := p.request(ctx, mcp.NewRequestId("mcpflow-1"), json.RawMessage(`{"name":"echo","arguments":{"x":1}}`))
	m := p.next(t)
	require.Equal(t, "mcpflow-1", m["id"])
	require.Equal(t, "tools/call", m["method"])
	require.Equal(t, map[string]any{"name": "echo", "arguments": map[string]any{"x": float64(1)}}, m["params"])
	b := p.request(ctx, mcp.NewRequestId(int64(7)), map[string]any{"name": "other"})
	m = p.next(t)
	require.Equal(t, float64(7), m["id"])

	p.send(t, `this is not JSON`)
	p.send(t, `{"jsonrpc":"2.0","id":"unknown","result":{}}`)
	p.send(t, `  {"jsonrpc":"2.0", "id": 7, "result":{"n":7}}  `)
	p.send(t, `{"jsonrpc":"2.0","id":"\u006dcpflow-1","error":{"code":-32602,"message":"bad"}}`)
	rb := <-b
	require.NoError(t, rb.err)
	require.JSONEq(t, `{"n":7}`, string(rb.resp.Result))
	require.Equal(t, mcp.NewRequestId(int64(7)), rb.resp.ID)
	ra := <-a
	require.NoError(t, ra.err)
	require.NotNil(t, ra.resp.Error)
	require.Equal(t, "bad", ra.resp.Error.Message)
	require.Equal(t, mcp.NewRequestId("mcpflow-1"), ra.resp.ID)

	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	c := p.request(ctx, mcp.NewRequestId("long"), json.RawMessage(`{}`))
	p.next(t)
	p.send(t, `{"jsonrpc":"2.0","id":"long","result":{"text":"`+long+`"}}`)
	rc := <-c
	require.NoError(t, rc.err)
	require.JSONEq(t, `{"text":"`+long+`"}`, string(rc.resp.Result))
}

// The server's notifications reach the handler; its requests are answered
// by the request handler, or refused without one.
func TestServerMessages(t *testing.T) {
	p := newPipes(t)
	p.send(t, `{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`)
	m := p.next(t)
	require.Equal(t, "s1", m["id"])
	require.Equal(t, float64(mcp.METHOD_NOT_FOUND), m["error"].(map[string]any)["code"])

	notes := make(chan mcp.JSONRPCNotification, 1)
	p.tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { notes <- n })
	p.tr.SetRequestHandler(func(ctx context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if r.Method == "fail" {
			return nil, fmt.Errorf("handler failed")
		}
		return transport.NewJSONRPCResultResponse(r.ID, json.RawMessage(`{"roots":[]}`)), nil
	})
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"a":1}}`)
	select {
	case n := <-notes:
		require.Equal(t, "notifications/tools/list_changed", n.Method)
		require.Equal(t, float64(1), n.Params.AdditionalFields["a"])
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"roots/list"}`)
	m = p.next(t)
	require.Equal(t, float64(2), m["id"])
	require.Equal(t, map[string]any{"roots": []any{}}, m["result"])
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"fail"}`)
	m = p.next(t)
	require.Equal(t, float64(3), m["id"])
	require.Equal(t, "handler failed", m["error"].(map[string]any)["message"])
}

// A request's context ends its wait; the end of the server's stdout fails
// the requests in flight and later ones, but an answer read before it is
// delivered.
func TestEnds(t *testing.T) {
	p := newPipes(t)
	ctx, cancel := context.WithCancel(context.Background())
	a := p.request(ctx, mcp.NewRequestId("a"), json.RawMessage(`{}`))
	p.next(t)
	cancel()
	ra := <-a
	require.ErrorIs(t, ra.err, context.Canceled)

	b := p.request(context.Background(), mcp.NewRequestId("b"), json.RawMessage(`{}`))
	p.next(t)
	c := p.request(context.Background(), mcp.NewRequestId("c"), json.RawMessage(`{}`))
	p.next(t)
	_, err := io.WriteString(p.out, `{"jsonrpc":"2.0","id":"b","result":{}}`) // no newline: the last line
	require.NoError(t, err)
	require.NoError(t, p.out.Close())
	rb := <-b
	require.NoError(t, rb.err)
	rc := <-c
	require.ErrorIs(t, rc.err, transport.ErrTransportClosed)
	_, err = p.tr.SendRequest(context.Background(), transport.JSONRPCRequest{ID: mcp.NewRequestId("d"), Method: "x"})
	require.ErrorIs(t, err, transport.ErrTransportClosed)
	require.ErrorIs(t, p.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{}), transport.ErrTransportClosed)
}
