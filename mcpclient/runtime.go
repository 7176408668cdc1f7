package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Runtime.
type Options struct {
	// ExtensionsPath is the extensions_config.json resolved at start-up
	// ("" = none). Its content signature decides when discovered tools are
	// stale (spec §3.2).
	ExtensionsPath string
	// Initial is the configuration loaded at start-up from ExtensionsPath,
	// so the first discovery does not read the file again (optional).
	Initial *config.Extensions
	// Env resolves $VAR placeholders when the file is re-read (nil:
	// os.LookupEnv).
	Env func(string) (string, bool)
	// WorkspaceRoot is workspace.root: stdio servers run in
	// <root>/users/<user>/threads/<thread>/user-data/workspace.
	WorkspaceRoot string
	// MaxSessions caps pooled stdio sessions (default 256).
	MaxSessions int
	// FrozenTaskServers, when the task runtime runs (non-nil), are the
	// enabled servers with task_toolsets as mcpflow started with them, and
	// FrozenInterceptors the mcpInterceptors of that time (spec §4.6): a
	// task server whose runtime configuration differs later, or one added
	// since, has its tools fail with a restart error.
	FrozenTaskServers  map[string]config.Server
	FrozenInterceptors []string
	Logger             *slog.Logger
	// Meter records tool-call and pool metrics, Tracer a span per tool call
	// (nil: none).
	Meter  metric.Meter
	Tracer trace.Tracer
}

// Submitter runs the submit wrapper of a task toolset: it starts the
// durable task and returns its handle. The task runtime installs one.
type Submitter func(ctx context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, toolset config.TaskToolset) (*mcpflow.ToolResult, error)

// Runtime is the MCP client runtime of one process: lazy, single-flight
// discovery with a tool cache keyed by the config file's content signature,
// a pool of stdio sessions per (server, user:thread), and one shared
// session per SSE/HTTP server. It implements mcpflow.ToolRuntime.
type Runtime struct {
	opts Options
	log  *slog.Logger
	pool *Pool

	oauth oauthTokens

	mu         sync.Mutex
	state      *toolState
	inflight   *discovery
	shared     map[string]*sharedSession // by server name
	submitter  Submitter
	background BackgroundTasks
	closed     bool
	metrics    *runtimeMetrics
}

var _ mcpflow.ToolRuntime = (*Runtime)(nil)

// NewRuntime returns a runtime; nothing connects until the first use.
func NewRuntime(o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	r := &Runtime{
		opts:   o,
		log:    o.Logger,
		pool:   NewPool(o.MaxSessions, o.Logger),
		shared: map[string]*sharedSession{},
	}
	r.metrics = newRuntimeMetrics(r, o.Meter, o.Tracer)
	return r
}

// ExtensionsPath returns the extensions_config.json the runtime watches.
func (r *Runtime) ExtensionsPath() string { return r.opts.ExtensionsPath }

// SetSubmitter installs (or, with nil, removes) the task submitter.
func (r *Runtime) SetSubmitter(s Submitter) {
	r.mu.Lock()
	r.submitter = s
	r.mu.Unlock()
}

// Pool returns the stdio session pool (for tests and metrics).
func (r *Runtime) Pool() *Pool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pool
}

// swapPoolLocked installs a fresh pool and returns the old one, which the
// caller closes after unlocking: sessions created after a retirement live
// in the new pool, so closing the old one can never kill them.
func (r *Runtime) swapPoolLocked() *Pool {
	old := r.pool
	r.pool = NewPool(r.opts.MaxSessions, r.log)
	return old
}

// ListTools returns the tools of every enabled, reachable server.
func (r *Runtime) ListTools(ctx context.Context, userID, threadID string) ([]mcpflow.Tool, error) {
	st, err := r.tools(ctx)
	if err != nil {
		return nil, err
	}
	tools := append([]mcpflow.Tool(nil), st.tools...)
	if r.backgroundTasks() != nil {
		tools = append(tools, builtinTools()...)
	}
	return tools, nil
}

// Skipped returns the servers left out of the last discovery and why.
func (r *Runtime) Skipped(ctx context.Context) (map[string]string, error) {
	st, err := r.tools(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range st.skipped {
		out[k] = v
	}
	return out, nil
}

// ResetCache drops the discovered tools and closes every pooled and shared
// session of this process; the next use discovers again.
func (r *Runtime) ResetCache() {
	r.mu.Lock()
	r.state = nil
	if r.opts.ExtensionsPath != "" {
		r.opts.Initial = nil // a reset reads the file again
	}
	shared := r.shared
	r.shared = map[string]*sharedSession{}
	old := r.swapPoolLocked()
	r.mu.Unlock()
	closeShared(shared)
	_ = old.CloseAll()
}

// Close ends every session and kills every stdio child.
func (r *Runtime) Close() error {
	if r.metrics.reg != nil {
		_ = r.metrics.reg.Unregister()
	}
	r.mu.Lock()
	r.closed = true
	r.state = nil
	shared := r.shared
	r.shared = map[string]*sharedSession{}
	pool := r.pool
	r.mu.Unlock()
	closeShared(shared)
	return pool.CloseAll()
}

// CallTool routes a call to the server that produced the tool.
func (r *Runtime) CallTool(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	st, err := r.tools(ctx)
	if err != nil {
		return nil, err
	}
	server := "(builtin)"
	if e := st.byName[call.Tool]; e != nil {
		server = e.server.Name
	} else if !isBuiltin(call.Tool) {
		server = "(unknown)"
	}
	return r.metrics.observe(ctx, server, call.Tool, func(ctx context.Context) (*mcpflow.ToolResult, error) {
		return r.callTool(ctx, st, call)
	})
}

func (r *Runtime) callTool(ctx context.Context, st *toolState, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	e := st.byName[call.Tool]
	if e == nil {
		if res, ok, err := r.callBuiltin(ctx, call); ok {
			return res, err
		}
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "unknown tool '%s'", call.Tool)
	}
	if e.drift != "" {
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "%s", e.drift)
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	if e.toolset != nil {
		r.mu.Lock()
		sub := r.submitter
		r.mu.Unlock()
		if sub == nil {
			return ToolError("The MCP task runtime is not initialized. Run this tool through mcpflow with mcp_tasks.enabled=true and a running worker."), nil
		}
		call.Arguments = args
		return sub(ctx, call, e.tool, *e.toolset)
	}
	res, err := r.Call(WithSecrets(ctx, call.Secrets), e.server, e.tool.OriginalName, call.UserID, call.ThreadID, args)
	var ce *CredentialError
	if errors.As(err, &ce) {
		return ToolError(ce.Message), nil
	}
	if err != nil {
		return nil, err
	}
	return ConvertResult(res)
}

// Call invokes a raw tool on srv for a user's thread: stdio through the
// pooled session of (server, user:thread) in the thread's workspace with
// path translation, SSE/HTTP through the shared session with the call's
// credential headers (OAuth, user_auth for userID, headers_from_context
// from a request-scoped ctx, see WithSecrets). Task activities use it for
// submit/status/cancel. A refused credential is a *CredentialError.
func (r *Runtime) Call(ctx context.Context, srv *config.Server, tool, userID, threadID string, args map[string]any) (*mcp.CallToolResult, error) {
	if srv.Type == config.TransportStdio {
		meta, err := r.stdioMeta(srv)
		if err != nil {
			return nil, err
		}
		ws, err := PrepareWorkspace(r.workspaceRoot(), userID, threadID)
		if err != nil {
			return nil, err
		}
		started := time.Now() // files this call writes are stamped after it
		key := PoolKey{Server: srv.Name, Scope: userID + ":" + threadID}
		dial := func(dctx context.Context) (*Session, error) {
			return Dial(dctx, srv, DialOptions{Dir: ws.Dir, Env: ws.Env(), Logger: r.log})
		}
		res, err := r.Pool().Call(ctx, key, dial, tool, args, meta)
		if err != nil {
			return nil, err
		}
		serverCwd := ws.Dir
		if srv.Cwd != "" {
			serverCwd = srv.Cwd
		}
		var changed []string
		if hasText(res) {
			changed = ws.ChangedSince(started)
		}
		ws.TranslateResult(res, serverCwd, changed)
		return res, nil
	}
	headers, err := r.credentialHeaders(ctx, srv, userID)
	if err != nil {
		return nil, err
	}
	sess, err := r.sharedSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	res, err := sess.CallTool(context.WithValue(ctx, callHeadersKey{}, headers), tool, args, nil)
	if err != nil && sharedBroken(err) {
		r.dropShared(srv.Name, sess)
	}
	return res, err
}

func (r *Runtime) workspaceRoot() string {
	if r.opts.WorkspaceRoot != "" {
		return r.opts.WorkspaceRoot
	}
	return filepath.Join(".mcpflow", "workspace")
}

func hasText(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := c.(mcp.TextContent); ok {
			return true
		}
		if _, ok := c.(*mcp.TextContent); ok {
			return true
		}
	}
	return false
}

// ToolError is a tool-level error result with one text block: what a
// refused call inside the tool layer returns (HTTP 200, is_error true).
func ToolError(msg string) *mcpflow.ToolResult {
	b, _ := json.Marshal(mcp.NewTextContent(msg))
	return &mcpflow.ToolResult{Content: []json.RawMessage{b}, IsError: true}
}

// ConvertResult turns an mcp-go result into the API's shape: content
// blocks as JSON objects, structured content as decoded JSON.
func ConvertResult(res *mcp.CallToolResult) (*mcpflow.ToolResult, error) {
	out := &mcpflow.ToolResult{Content: []json.RawMessage{}, IsError: res.IsError}
	for _, c := range res.Content {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encode MCP content: %w", err)
		}
		out.Content = append(out.Content, b)
	}
	switch {
	case len(res.RawStructuredContent) > 0 && string(res.RawStructuredContent) != "null":
		var v any
		if err := json.Unmarshal(res.RawStructuredContent, &v); err == nil {
			out.StructuredContent = v
		}
	case res.StructuredContent != nil:
		out.StructuredContent = res.StructuredContent
	}
	return out, nil
}

// RoutingHints renders the <mcp_routing_hints> prompt section (spec §3.9)
// from tools whose routing mode is prefer and that have keywords, by
// priority (highest first) then tool name; "" when there are none.
func (r *Runtime) RoutingHints(tools []mcpflow.Tool) string { return RoutingHints(tools) }
