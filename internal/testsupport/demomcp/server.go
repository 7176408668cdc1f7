package demomcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Name and Version identify the demo server in the MCP initialize handshake.
const (
	Name    = "demo-mcp"
	Version = "0.1.0"
)

// Transport names accepted by Run and Server.HTTPHandler.
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
)

// HTTP paths the demo server serves.
const (
	// StreamableHTTPPath is the streamable HTTP endpoint (--transport http).
	StreamableHTTPPath = "/mcp"
	// SSEPath is the SSE stream endpoint (--transport sse).
	SSEPath = "/sse"
	// SSEMessagePath is where SSE clients post their messages.
	SSEMessagePath = "/message"
)

// Config configures a Server. The zero value is usable: jobs live in
// memory, write_file writes into the process working directory at call time,
// and nothing is logged.
type Config struct {
	// StatePath, if set, is a JSON file holding jobs and call counters. It is
	// loaded by New and rewritten atomically after every change. Default: "".
	StatePath string
	// Workdir is the directory write_file writes into. Default: the process
	// working directory at the time of each call.
	Workdir string
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Now is the wall clock used for job progress. Default: time.Now.
	Now func() time.Time
	// RecordCalls keeps, in memory, the credentials every tool call arrived
	// with (HTTP headers and _meta headers) and its arguments as sent, for
	// the headers tool's history: a test server's view of what a client
	// sent. Never for production.
	RecordCalls bool
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Server is the demo MCP server: the tools and the job state behind them.
type Server struct {
	cfg  Config
	log  *slog.Logger
	jobs *jobStore
	mcp  *server.MCPServer

	callsMu sync.Mutex
	calls   []RecordedCall // with Config.RecordCalls
}

// RecordedCall is one tool call as the server saw it (Config.RecordCalls).
type RecordedCall struct {
	Tool        string      `json:"tool"`
	Headers     http.Header `json:"headers,omitempty"`      // sse/http request headers
	MetaHeaders any         `json:"meta_headers,omitempty"` // _meta.headers of the call
	// Arguments is the call's arguments as the JSON text that arrived (a
	// string, so that numbers keep every digit on their way back).
	Arguments string `json:"arguments,omitempty"`
}

// New builds a Server, loading the state file when Config.StatePath is set.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	jobs, err := openJobStore(cfg.StatePath, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("open job state: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, jobs: jobs}
	opts := []server.ServerOption{server.WithToolCapabilities(false), server.WithPromptCapabilities(false),
		server.WithResourceCapabilities(false, false), server.WithRecovery()}
	if cfg.RecordCalls {
		opts = append(opts, server.WithToolHandlerMiddleware(s.recordCall))
	}
	s.mcp = server.NewMCPServer(Name, Version, opts...)
	s.registerTools()
	s.registerPromptsAndResources()
	return s, nil
}

// MCPServer returns the underlying mcp-go server, e.g. for an in-process
// client or server.NewStdioServer.
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// HTTPHandler returns a handler for the given HTTP transport: TransportHTTP
// serves streamable HTTP at StreamableHTTPPath, TransportSSE serves SSE at
// SSEPath with messages at SSEMessagePath. The returned function ends open
// MCP sessions (long-lived streams); call it before http.Server.Shutdown.
func (s *Server) HTTPHandler(transport string) (http.Handler, func(context.Context), error) {
	mux := http.NewServeMux()
	switch transport {
	case TransportHTTP:
		h := server.NewStreamableHTTPServer(s.mcp, server.WithEndpointPath(StreamableHTTPPath),
			server.WithHTTPContextFunc(withRequestHeaders))
		mux.Handle(StreamableHTTPPath, h)
		return mux, h.CloseSessions, nil
	case TransportSSE:
		h := server.NewSSEServer(s.mcp,
			server.WithSSEEndpoint(SSEPath),
			server.WithMessageEndpoint(SSEMessagePath),
			server.WithSSEContextFunc(withRequestHeaders),
		)
		mux.Handle(SSEPath, h)
		mux.Handle(SSEMessagePath, h)
		return mux, func(context.Context) { h.CloseSessions() }, nil
	default:
		return nil, nil, fmt.Errorf("transport %q is not an HTTP transport (want %q or %q)", transport, TransportHTTP, TransportSSE)
	}
}

func (s *Server) recordCall(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := RecordedCall{Tool: req.Params.Name}
		c.Headers, _ = ctx.Value(requestHeadersKey{}).(http.Header)
		if req.Params.Meta != nil {
			c.MetaHeaders = req.Params.Meta.AdditionalFields["headers"]
		}
		c.Arguments = string(req.Params.RawArguments)
		if c.Arguments == "" && req.Params.Arguments != nil { // an in-process call: no wire bytes
			b, _ := json.Marshal(req.Params.Arguments)
			c.Arguments = string(b)
		}
		s.callsMu.Lock()
		s.calls = append(s.calls, c)
		s.callsMu.Unlock()
		return next(ctx, req)
	}
}

// RecordedCalls returns the calls recorded so far (Config.RecordCalls).
func (s *Server) RecordedCalls() []RecordedCall {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	return append([]RecordedCall(nil), s.calls...)
}
