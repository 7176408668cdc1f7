package streamhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/demomcp"
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

const legacy = mcp.ProtocolVersion20251125

// seen is one HTTP request an upstream got.
type seen struct {
	Method string // HTTP method
	RPC    string // the JSON-RPC method of a POST ("" for a response)
	Header http.Header
	Answer string // the Content-Type of the answer
}

// upstream is a real MCP server (the demo server, or an mcp-go server of
// the test) served on 127.0.0.1, with a log of the HTTP requests it got.
// A gate can answer in its place (a proxy that checks credentials).
type upstream struct {
	url     string
	handler http.Handler
	gate    atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
	mu      sync.Mutex
	log     []seen
}

func newUpstream(t *testing.T, h http.Handler) *upstream {
	t.Helper()
	u := &upstream{handler: h}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{Method: r.Method, Header: r.Header.Clone()}
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var m struct{ Method string }
			_ = json.Unmarshal(b, &m)
			s.RPC = m.Method
		}
		u.mu.Lock()
		i := len(u.log)
		u.log = append(u.log, s)
		u.mu.Unlock()
		if g := u.gate.Load(); g == nil || !(*g)(w, r) {
			u.handler.ServeHTTP(w, r)
		}
		u.mu.Lock()
		u.log[i].Answer = w.Header().Get("Content-Type")
		u.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// requests returns the requests seen so far.
func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.log...)
}

// last returns the last request of JSON-RPC method rpc (or HTTP method).
func (u *upstream) last(t *testing.T, rpc string) seen {
	t.Helper()
	reqs := u.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].RPC == rpc || reqs[i].Method == rpc {
			return reqs[i]
		}
	}
	t.Fatalf("the server got no %s request", rpc)
	return seen{}
}

// answer returns the Content-Type of the answer to the last request of
// JSON-RPC method rpc, once the server's handler returned.
func (u *upstream) answer(t *testing.T, rpc string) string {
	t.Helper()
	var ct string
	require.Eventually(t, func() bool { ct = u.last(t, rpc).Answer; return ct != "" }, 5*time.Second, time.Millisecond)
	return ct
}

// demoHandler serves the demo MCP server's streamable HTTP endpoint.
func demoHandler(t *testing.T) http.Handler {
	t.Helper()
	d, err := demomcp.New(demomcp.Config{})
	require.NoError(t, err)
	h, closeSessions, err := d.HTTPHandler(demomcp.TransportHTTP)
	require.NoError(t, err)
	t.Cleanup(func() { closeSessions(context.Background()) })
	return h
}

// statefulDemoHandler serves the demo server's tools with mcp-go's
// stateful session manager, which knows the sessions it ended.
func statefulDemoHandler(t *testing.T) http.Handler {
	t.Helper()
	d, err := demomcp.New(demomcp.Config{})
	require.NoError(t, err)
	h := server.NewStreamableHTTPServer(d.MCPServer(), server.WithStateful(true))
	t.Cleanup(func() { h.CloseSessions(context.Background()) })
	return h
}

// askHandler serves an mcp-go server whose tool "ask" logs a message,
// asks the client a question (elicitation) and answers what it heard.
func askHandler(t *testing.T) http.Handler {
	t.Helper()
	s := server.NewMCPServer("ask", "1.0.0", server.WithElicitation(), server.WithLogging())
	s.AddTool(mcp.NewTool("ask", mcp.WithString("question", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "asking"})
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         req.GetString("question", ""),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return mcp.NewToolResultText(string(res.Action) + " " + string(b)), nil
	})
	h := server.NewStreamableHTTPServer(s)
	t.Cleanup(func() { h.CloseSessions(context.Background()) })
	return h
}

// dial connects mcp-go's client over a streamhttp.Transport and
// initializes it at version ("" negotiates, as mcpflow's sessions do).
func dial(t *testing.T, url string, o streamhttp.Options, version string, opts ...client.ClientOption) (*client.Client, *streamhttp.Transport, error) {
	t.Helper()
	if o.HTTPClient == nil {
		o.HTTPClient = testHTTP
	}
	tr, err := streamhttp.New(url, o)
	require.NoError(t, err)
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Start(ctx))
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "streamhttp-test", Version: "1"}
	_, err = c.Initialize(ctx, req)
	return c, tr, err
}

func echo(t *testing.T, c *client.Client, msg string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = demomcp.ToolEcho
	req.Params.Arguments = map[string]any{"message": msg}
	return c.CallTool(ctx, req)
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotEmpty(t, res.Content)
	tc, ok := res.Content[0].(mcp.TextContent)
	require.True(t, ok, "content %T", res.Content[0])
	return tc.Text
}

// A 2025-11-25 session: JSON answers, the session id the initialize answer
// set on every later request, the protocol version, the Accept header and
// the header function's headers.
func TestJSONAnswerAndSession(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	var calls atomic.Int32
	headers := func(context.Context) map[string]string {
		calls.Add(1)
		return map[string]string{"Authorization": "Bearer t0k3n", "X-Trace": "on"}
	}
	c, tr, err := dial(t, up.url, streamhttp.Options{Headers: headers}, legacy)
	require.NoError(t, err)
	require.Equal(t, legacy, c.ProtocolVersion())
	session := tr.GetSessionId()
	require.NotEmpty(t, session)

	res, err := echo(t, c, "héllo \"world\"")
	require.NoError(t, err)
	require.Equal(t, "héllo \"world\"", text(t, res))

	init := up.last(t, "initialize")
	require.Empty(t, init.Header.Get(transport.HeaderKeySessionID))
	call := up.last(t, "tools/call")
	require.Equal(t, "application/json", up.answer(t, "tools/call"))
	require.Equal(t, session, call.Header.Get(transport.HeaderKeySessionID))
	require.Equal(t, legacy, call.Header.Get(transport.HeaderKeyProtocolVersion))
	require.Equal(t, "application/json, text/event-stream", call.Header.Get("Accept"))
	require.Equal(t, "application/json", call.Header.Get("Content-Type"))
	require.Equal(t, "Bearer t0k3n", call.Header.Get("Authorization"))
	require.Equal(t, "on", call.Header.Get("X-Trace"))
	notified := up.last(t, "notifications/initialized")
	require.Equal(t, session, notified.Header.Get(transport.HeaderKeySessionID))
	require.EqualValues(t, len(up.requests()), calls.Load(), "the header function runs once per request")
}

// 2026-07-28 (negotiated with server/discover): no session, no session
// header, the request's Mcp-Method/Mcp-Name headers pass through, and
// Close sends no DELETE.
func TestModernSessionless(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	c, tr, err := dial(t, up.url, streamhttp.Options{}, "")
	require.NoError(t, err)
	require.True(t, mcp.IsModernProtocol(c.ProtocolVersion()), "negotiated %s", c.ProtocolVersion())
	res, err := echo(t, c, "hi")
	require.NoError(t, err)
	require.Equal(t, "hi", text(t, res))
	require.Empty(t, tr.GetSessionId())
	call := up.last(t, "tools/call")
	require.Empty(t, call.Header.Get(transport.HeaderKeySessionID))
	require.Equal(t, c.ProtocolVersion(), call.Header.Get(transport.HeaderKeyProtocolVersion))
	require.Equal(t, "tools/call", call.Header.Get(mcp.HeaderMethod))
	require.Equal(t, demomcp.ToolEcho, call.Header.Get(mcp.HeaderName))
	require.NoError(t, c.Close())
	for _, r := range up.requests() {
		require.NotEqual(t, http.MethodDelete, r.Method)
	}
}

// A tool that logs and asks a question while it runs: the answer comes as
// an SSE stream carrying a notification, the server's elicitation request
// (answered by the client's handler, whose answer the transport posts
// back with the session), then the response.
func TestSSEAnswerWithQuestion(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, askHandler(t))
	var logged atomic.Int32
	asked := make(chan string, 1)
	c, tr, err := dial(t, up.url, streamhttp.Options{}, legacy, client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- r.Params.Message
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": "blue"}}}, nil
	})))
	require.NoError(t, err)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			logged.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "ask"
	req.Params.Arguments = map[string]any{"question": "favourite colour?"}
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	require.Equal(t, `accept {"answer":"blue"}`, text(t, res))
	require.Equal(t, "favourite colour?", <-asked)
	require.EqualValues(t, 1, logged.Load())
	require.Equal(t, "text/event-stream", up.answer(t, "tools/call"))
	var answer seen
	for _, r := range up.requests() {
		if r.Method == http.MethodPost && r.RPC == "" {
			answer = r
		}
	}
	require.Equal(t, tr.GetSessionId(), answer.Header.Get(transport.HeaderKeySessionID), "the answer is posted on the session")
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

// A server that no longer knows the session answers 404:
// the request fails with ErrSessionTerminated, the session id is dropped,
// later requests fail the same way without reaching the server, and an
// initialize starts a new session.
func TestSessionLost(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, statefulDemoHandler(t))
	c, tr, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.NoError(t, err)
	old := tr.GetSessionId()
	// The server ends the session (as after its idle TTL).
	del, err := http.NewRequest(http.MethodDelete, up.url, nil)
	require.NoError(t, err)
	del.Header.Set(transport.HeaderKeySessionID, old)
	resp, err := testHTTP.Do(del)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, err = echo(t, c, "lost?")
	require.ErrorIs(t, err, transport.ErrSessionTerminated)
	require.Empty(t, tr.GetSessionId())
	n := len(up.requests())
	_, err = echo(t, c, "again?")
	require.ErrorIs(t, err, transport.ErrSessionTerminated)
	require.Len(t, up.requests(), n, "no request goes out on a lost session")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = legacy
	_, err = c.Initialize(ctx, req)
	require.NoError(t, err)
	require.NotEmpty(t, tr.GetSessionId())
	require.NotEqual(t, old, tr.GetSessionId())
	res, err := echo(t, c, "back")
	require.NoError(t, err)
	require.Equal(t, "back", text(t, res))
}

// 401 is the authorization error mcp-go's transport gives, naming the
// resource metadata of the challenge; with the credential the header
// function adds, the same server answers.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	const metadata = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
	gate := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") == "Bearer good" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", resource_metadata="`+metadata+`"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return true
	}
	up.gate.Store(&gate)

	_, _, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.ErrorIs(t, err, transport.ErrAuthorizationRequired)
	var ae *transport.AuthorizationRequiredError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, metadata, ae.ResourceMetadataURL)

	c, _, err := dial(t, up.url, streamhttp.Options{Headers: func(context.Context) map[string]string {
		return map[string]string{"Authorization": "Bearer good"}
	}}, legacy)
	require.NoError(t, err)
	res, err := echo(t, c, "in")
	require.NoError(t, err)
	require.Equal(t, "in", text(t, res))
}

// Close ends the session with DELETE and fails later requests with
// ErrTransportClosed.
func TestCloseDeletesSession(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	c, tr, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.NoError(t, err)
	session := tr.GetSessionId()
	require.NoError(t, c.Close())
	del := up.last(t, http.MethodDelete)
	require.Equal(t, session, del.Header.Get(transport.HeaderKeySessionID))
	require.Equal(t, legacy, del.Header.Get(transport.HeaderKeyProtocolVersion))
	_, err = echo(t, c, "closed")
	require.ErrorIs(t, err, transport.ErrTransportClosed)
}

// Close cancels a request in flight.
func TestCloseCancelsCallInFlight(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	c, tr, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = demomcp.ToolSlow
		req.Params.Arguments = map[string]any{"seconds": 30}
		_, err := c.CallTool(context.Background(), req)
		done <- err
	}()
	require.Eventually(t, func() bool {
		for _, r := range up.requests() {
			if r.RPC == "tools/call" {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, tr.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, transport.ErrTransportClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the call in flight")
	}
}

// SendRaw posts bytes as they are and answers the result as the server
// wrote it, a JSON-RPC error as such; on an SSE answer too.
func TestSendRaw(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up := newUpstream(t, demoHandler(t))
	_, tr, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.NoError(t, err)

	body := []byte(`{"jsonrpc":"2.0","id":"raw-1","method":"tools/call","params":{"name":"add","arguments":{"a":1.5,"b":2}}}`)
	raw, rpc, err := tr.SendRaw(ctx, "tools/call", body, nil)
	require.NoError(t, err)
	require.Nil(t, rpc)
	var res struct {
		Structured struct{ Sum float64 } `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), string(raw))
	require.Equal(t, 3.5, res.Structured.Sum)
	call := up.last(t, "tools/call")
	require.Equal(t, tr.GetSessionId(), call.Header.Get(transport.HeaderKeySessionID))

	raw, rpc, err = tr.SendRaw(ctx, "no/such", []byte(`{"jsonrpc":"2.0","id":2,"method":"no/such"}`), http.Header{"X-Extra": {"1"}})
	require.NoError(t, err)
	require.Nil(t, raw)
	require.NotNil(t, rpc)
	require.Equal(t, mcp.METHOD_NOT_FOUND, rpc.Code)
	require.Equal(t, "1", up.last(t, "no/such").Header.Get("X-Extra"))

	// An SSE answer with a server request in it, through SendRaw.
	askUp := newUpstream(t, askHandler(t))
	_, askTr, err := dial(t, askUp.url, streamhttp.Options{}, legacy, client.WithElicitationHandler(elicitFunc(func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	})))
	require.NoError(t, err)
	raw, rpc, err = askTr.SendRaw(ctx, "tools/call", []byte(`{"jsonrpc":"2.0","id":"raw-2","method":"tools/call","params":{"name":"ask","arguments":{"question":"?"}}}`), nil)
	require.NoError(t, err)
	require.Nil(t, rpc)
	require.True(t, strings.Contains(string(raw), `decline null`), string(raw))
}

// A request whose context ends fails with the context's error.
func TestContextCancelled(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, demoHandler(t))
	c, _, err := dial(t, up.url, streamhttp.Options{}, legacy)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = demomcp.ToolSlow
	req.Params.Arguments = map[string]any{"seconds": 30}
	_, err = c.CallTool(ctx, req)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}
