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
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/lru"
	"github.com/mcpflow/mcpflow/mcpclient/credential"
	"github.com/mcpflow/mcpflow/mcpclient/question"
	"github.com/mcpflow/mcpflow/mcpclient/session"
	"github.com/mcpflow/mcpflow/policy"
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
	// MaxCallerSessions caps the sessions a process holds open to servers
	// whose credential is exchanged per caller, one per server and user
	// (default 256): dialling one more retires the least recently used,
	// which closes once its calls end.
	MaxCallerSessions int
	// SessionSlotWait is how long a call that needs a new stdio session
	// waits for a slot when all MaxSessions hold a call in flight or back a
	// running durable task, before it fails with EUnavailable (default
	// 10 s; negative: no wait).
	SessionSlotWait time.Duration
	// MaxPinnedPerUser caps the stdio sessions one user's running durable
	// tasks hold pinned in this process (sessions that cannot be evicted
	// while their tasks run): the submit of a task that would pin one more
	// fails with ETooMany before it reaches the server, so one user cannot
	// fill the pool. 0: no cap.
	MaxPinnedPerUser int
	// MaxContentBytes bounds an ordinary call's result and a resource
	// read (server.max_content_bytes): larger ones are cut where the
	// caller sees it, a larger prompt fails. 0: no bound.
	MaxContentBytes int
	// DiscoveryRetry is the delay before a server whose tool discovery
	// failed is tried again (default 1 s); it doubles after each failure up
	// to DiscoveryRetryMax (default 1 minute). A retry runs in the
	// background when tools are listed, or at once for a call of one of the
	// server's tools, one at a time per server.
	DiscoveryRetry    time.Duration
	DiscoveryRetryMax time.Duration
	// DiscoveryTimeout bounds the tool discovery of a server whose
	// session_init_timeout is null (default 5 minutes); other servers are
	// bounded by their session_init_timeout.
	DiscoveryTimeout time.Duration
	// FrozenTaskServers, when the task runtime runs (non-nil), are the
	// task servers (IsTaskServer: enabled, with task_toolsets or
	// native_tasks) as mcpflow started with them, and
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

	// now is the clock of the configuration's freshness check (nil:
	// time.Now); tests move it on instead of sleeping (export_test.go).
	now func() time.Time
}

// Option defaults.
const (
	defaultSessionSlotWait   = session.DefaultSlotWait
	defaultMaxCallerSessions = 256
	defaultDiscoveryRetry    = time.Second
	defaultDiscoveryRetryMax = time.Minute
	defaultDiscoveryTimeout  = 5 * time.Minute
)

// withDefaults returns o with its documented defaults filled in.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	if o.MaxCallerSessions <= 0 {
		o.MaxCallerSessions = defaultMaxCallerSessions
	}
	if o.SessionSlotWait == 0 {
		o.SessionSlotWait = defaultSessionSlotWait
	}
	if o.DiscoveryRetry <= 0 {
		o.DiscoveryRetry = defaultDiscoveryRetry
	}
	if o.DiscoveryRetryMax <= 0 {
		o.DiscoveryRetryMax = defaultDiscoveryRetryMax
	}
	o.DiscoveryRetryMax = max(o.DiscoveryRetryMax, o.DiscoveryRetry)
	if o.DiscoveryTimeout <= 0 {
		o.DiscoveryTimeout = defaultDiscoveryTimeout
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Submitter runs the submit wrapper of a task toolset: it starts the
// durable task and returns its handle. The task runtime installs one.
type Submitter func(ctx context.Context, call mcpflow.ToolCall, tool mcpflow.Tool, toolset config.TaskToolset) (*mcpflow.ToolResult, error)

// Runtime is the MCP client runtime of one process: lazy, single-flight
// discovery with a tool cache keyed by the config file's content signature
// (servers whose discovery failed are retried by themselves), a pool of
// stdio sessions per (server, user:thread), and one shared session per
// SSE/HTTP server, or per server and user for a server whose credential is
// exchanged per caller (whose tools are then listed per user, see
// caller_tools.go). A configuration change retires only the sessions of the
// servers whose effective configuration changed, and never under a call in
// flight. It implements mcpflow.ToolRuntime.
type Runtime struct {
	opts      Options
	log       *slog.Logger
	pool      *session.Pool
	questions *question.Questions

	creds *credential.Cache

	// ctx ends at Close: background discovery, retries and shared dials
	// run under it, counted by bg; closers counts shared sessions being
	// closed.
	ctx     context.Context
	cancel  context.CancelFunc
	bg      sync.WaitGroup
	closers sync.WaitGroup

	mu         sync.Mutex
	state      *toolState
	inflight   *discovery
	lastExt    *config.Extensions               // the last configuration that loaded
	known      map[string][]string              // server → raw tool names of its last good discovery
	shared     map[sharedKey]*sharedSession     // by server (and user, for a perCaller server)
	callers    *lru.Cache[string, *callerTools] // users' views of the perCaller servers' tools; nil until the first
	sharedAll  map[*sharedSession]struct{}      // every shared session not closed yet
	taskShared map[taskSharedKey]*sharedSession // running native tasks → the shared session they were started on
	forgetful  map[string]bool                  // servers seen forgetting tasks when their session ended
	protocols  map[string]string                // server and configuration → the revision its dials settled on (below 2026-07-28)
	submitter  Submitter
	background BackgroundTasks
	// approvals and recordDecision are behind ToolReviewApprovals.
	approvals      mcpflow.ApprovalStore
	recordDecision func(context.Context, mcpflow.AuditRecord)
	closed         bool
	gen            uint64 // counts ResetCache calls
	metrics        *runtimeMetrics

	listMu       sync.Mutex
	listWatchers map[*listWatcher]struct{} // WatchLists' (surface.go)
}

var _ mcpflow.ToolRuntime = (*Runtime)(nil)

// NewRuntime returns a runtime; nothing connects until the first use.
func NewRuntime(o Options) *Runtime {
	o = o.withDefaults()
	r := &Runtime{
		opts:       o,
		log:        o.Logger,
		creds:      credential.NewCache(o.Logger),
		pool:       session.NewPool(o.MaxSessions, o.Logger),
		known:      map[string][]string{},
		shared:     map[sharedKey]*sharedSession{},
		sharedAll:  map[*sharedSession]struct{}{},
		taskShared: map[taskSharedKey]*sharedSession{},
		forgetful:  map[string]bool{},
		protocols:  map[string]string{},
	}
	r.pool.SetSlotWait(o.SessionSlotWait)
	r.questions = question.New()
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.metrics = newRuntimeMetrics(r, o.Meter, o.Tracer)
	return r
}

// Questions returns the runtime's questions of native MCP tasks: its
// sessions hand them the elicitations servers send, taskdriver.Native
// reads and answers them.
func (r *Runtime) Questions() *question.Questions { return r.questions }

// ExtensionsPath returns the extensions_config.json the runtime watches.
func (r *Runtime) ExtensionsPath() string { return r.opts.ExtensionsPath }

// SetSubmitter installs (or, with nil, removes) the task submitter. While
// one is installed, tools that run as native MCP tasks (execution.taskSupport
// "required", or "optional" on a server with native_tasks) are listed and
// called as durable task tools.
func (r *Runtime) SetSubmitter(s Submitter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.submitter = s
	if cur := r.state; cur != nil && cur.native != (s != nil) {
		next := cur.clone()
		next.native = s != nil
		r.assemble(next)
		r.state = next
	}
}

// Server returns the current configuration of the enabled server name, as
// the runtime loaded it last (the configuration file is checked for
// changes as on every use); ENotFound when no enabled server has that
// name. Durable tasks of a server that is not frozen at start-up (native
// MCP task tools with taskSupport "required" on a server without
// native_tasks) run with it.
func (r *Runtime) Server(ctx context.Context, name string) (*config.Server, error) {
	st, err := r.current(ctx)
	if err != nil {
		return nil, err
	}
	if srv, ok := st.ext.Lookup(name); ok && srv.Enabled {
		cp := *srv
		return &cp, nil
	}
	return nil, mcpflow.Errorf(mcpflow.ENotFound, "MCP server '%s' is not an enabled server of the current configuration", name)
}

// Policies returns the tool policies of the configuration in use (nil:
// none). A file that cannot be loaded keeps the last good one's, as it
// keeps its tools.
func (r *Runtime) Policies(ctx context.Context) (*policy.Set, error) {
	st, err := r.tools(ctx)
	if err != nil || st.ext == nil {
		return nil, err
	}
	return st.ext.Policies, nil
}

// VirtualServers returns the virtual servers of the configuration in use
// (nil: none).
func (r *Runtime) VirtualServers(ctx context.Context) (map[string]*policy.VirtualServer, error) {
	st, err := r.tools(ctx)
	if err != nil || st.ext == nil {
		return nil, err
	}
	return st.ext.VirtualServers, nil
}

// Pool returns the stdio session pool (for tests and metrics).
func (r *Runtime) Pool() *session.Pool { return r.pool }

// ListTools returns the tools of every enabled, reachable server. Servers
// whose discovery failed and whose retry is due are tried again in the
// background; their tools appear in a later listing once they answer. The
// tools of a server whose credential is exchanged per caller are those
// listed for userID with its exchanged token, for a caller signed in with
// an identity provider only (caller_tools.go).
func (r *Runtime) ListTools(ctx context.Context, userID, threadID string) ([]mcpflow.Tool, error) {
	st, err := r.toolsFor(ctx, userID)
	if err != nil {
		return nil, err
	}
	r.retryDue(st)
	tools := append([]mcpflow.Tool(nil), st.tools...)
	if r.backgroundTasks() != nil {
		tools = append(tools, builtinTools()...)
	}
	if r.reviews(ctx) {
		tools = append(tools, reviewTool())
	}
	return tools, nil
}

// LookupTool returns the tool name as ListTools lists it, or nil when the
// listing has none; it copies that one tool, not the listing.
func (r *Runtime) LookupTool(ctx context.Context, userID, threadID, name string) (*mcpflow.Tool, error) {
	st, err := r.toolsFor(ctx, userID)
	if err != nil {
		return nil, err
	}
	r.retryDue(st)
	if e := st.byName[name]; e != nil {
		t := e.tool
		return &t, nil
	}
	if name == ToolReviewApprovals && r.reviews(ctx) {
		t := reviewTool()
		return &t, nil
	}
	if isBuiltin(name) && r.backgroundTasks() != nil {
		for _, t := range builtinTools() {
			if t.Name == name {
				return &t, nil
			}
		}
	}
	return nil, nil
}

// Skipped returns the servers left out of the listing and why: those that
// cannot be connected to as configured, and those whose discovery failed
// (retried).
func (r *Runtime) Skipped(ctx context.Context) (map[string]string, error) {
	st, err := r.tools(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range st.skipped {
		out[k] = v
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, sr := range st.down {
		out[name] = "Skipping MCP server '" + name + "' after " + sr.cause
	}
	return out, nil
}

// UnavailableServers returns the enabled servers whose tools are missing
// from userID's listing, in configuration order, with the reason: a
// connection setting that is missing or invalid, or a failed tool
// discovery (those are retried); for a server whose credential is
// exchanged per caller, a caller not signed in with an identity provider
// or a failed listing for userID. Reasons never contain header,
// environment or URL values.
func (r *Runtime) UnavailableServers(ctx context.Context, userID string) ([]mcpflow.UnavailableServer, error) {
	st, err := r.toolsFor(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := []mcpflow.UnavailableServer{}
	r.mu.Lock()
	for i := range st.ext.Servers {
		name := st.ext.Servers[i].Name
		if reason, ok := st.skipped[name]; ok {
			out = append(out, mcpflow.UnavailableServer{Server: name, Reason: reason})
		} else if sr := st.down[name]; sr != nil {
			out = append(out, mcpflow.UnavailableServer{Server: name, Reason: sr.cause})
		}
	}
	r.mu.Unlock()
	return callerUnavailable(ctx, st, out), nil
}

// ResetCache drops the discovered tools and starts discovering again in
// the background: the configuration file is read again and every server is
// discovered at once (failed servers too, whatever their backoff); the
// next use waits for it. Sessions of servers whose effective configuration
// did not change are kept; the others are retired as on any configuration
// change (closed when idle, after their calls otherwise, never while they
// back a running durable task). Every admin configuration write calls it.
func (r *Runtime) ResetCache() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = nil
	if r.opts.ExtensionsPath != "" {
		r.opts.Initial = nil // a reset reads the file again
	}
	r.protocols = map[string]string{} // servers may have learned 2026-07-28 meanwhile
	r.gen++                           // a discovery in flight read the file before the reset
	if !r.closed {
		r.startDiscoveryLocked()
	}
}

// Close ends every session and kills every stdio child, even those with
// calls in flight (shutdown); it returns once they are closed and the
// background discovery is over. It is idempotent.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.state = nil
	r.mu.Unlock()
	if r.metrics.reg != nil {
		_ = r.metrics.reg.Unregister()
	}
	r.cancel()
	r.questions.Close()
	r.bg.Wait()
	r.closeAllShared()
	return r.pool.Shutdown()
}

// CallTool routes a call to the server that produced the tool. A tool of a
// server whose discovery failed (one it listed before, one its
// configuration names, or "<server>_..." for a prefixed server never
// reached) waits for that server's due retry and answers EUnavailable
// naming the server while it is down.
func (r *Runtime) CallTool(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	st, err := r.toolsFor(ctx, call.UserID)
	if err != nil {
		return nil, err
	}
	server := "(builtin)"
	if e := st.byName[call.Tool]; e != nil {
		server = e.server.Name
	} else if !isBuiltin(call.Tool) {
		server = "(unknown)"
		if sr := r.ownerDown(st, call.Tool); sr != nil {
			server = sr.srv.Name
		}
	}
	return r.metrics.observe(ctx, server, call.Tool, func(ctx context.Context) (*mcpflow.ToolResult, error) {
		return r.callTool(ctx, st, call)
	})
}

func (r *Runtime) callTool(ctx context.Context, st *toolState, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	e, err := r.resolve(ctx, st, call.Tool)
	if err != nil {
		return nil, err
	}
	if e == nil {
		if call, err = withArguments(call); err != nil {
			return nil, err
		}
		if res, ok, err := r.callBuiltin(ctx, call); ok {
			return res, err
		}
		var ce *credential.CredentialError
		if err := r.callerMissing(ctx, st, call.Tool); errors.As(err, &ce) {
			return ToolError(ce.Message), nil
		} else if err != nil {
			return nil, err
		}
		return nil, mcpflow.UnknownTool(call.Tool)
	}
	if e.drift != "" {
		return nil, mcpflow.Errorf(mcpflow.EUnavailable, "%s", e.drift)
	}
	if e.needsTasks != "" {
		return ToolError(e.needsTasks), nil
	}
	if e.toolset != nil {
		r.mu.Lock()
		sub := r.submitter
		r.mu.Unlock()
		if sub == nil {
			return ToolError("The MCP task runtime is not initialized. Run this tool through mcpflow with mcp_tasks.enabled=true and a running worker."), nil
		}
		if call, err = withArguments(call); err != nil {
			return nil, err
		}
		return sub(ctx, call, e.tool, *e.toolset)
	}
	var args any = call.Arguments
	if call.Arguments == nil && len(call.RawArguments) > 0 {
		args = call.RawArguments // sent as the caller wrote them
	}
	res, err := r.callResult(session.WithRelay(credential.WithSecrets(ctx, call.Secrets), call.Relay), e.server, e.config, e.tool.OriginalName, call.UserID, call.ThreadID, args)
	var ce *credential.CredentialError
	if errors.As(err, &ce) {
		return ToolError(ce.Message), nil
	}
	var ir *session.InputRequiredAnswer
	if errors.As(err, &ir) {
		// The server asks the caller (CallRelay.PassInput): the caller's
		// retry brings the answers.
		return &mcpflow.ToolResult{InputRequired: ir.Raw}, nil
	}
	var ta *session.TaskAnswer
	if errors.As(err, &ta) {
		if call, err = withArguments(call); err != nil {
			return nil, err
		}
		return r.adopt(ctx, call, e, ta)
	}
	return res, err
}

// withArguments is call with its arguments decoded into a map ({} for
// none), for what reads them (built-in tools, durable submits).
func withArguments(call mcpflow.ToolCall) (mcpflow.ToolCall, error) {
	args, err := call.CallArguments()
	if err != nil {
		return call, mcpflow.Errorf(mcpflow.EInvalid, "%s", err.Error())
	}
	if args == nil {
		args = map[string]any{}
	}
	call.Arguments = args
	return call, nil
}

func (r *Runtime) workspaceRoot() string {
	if r.opts.WorkspaceRoot != "" {
		return r.opts.WorkspaceRoot
	}
	return filepath.Join(".mcpflow", "workspace")
}

// ToolError is a tool-level error result with one text block: what a
// refused call inside the tool layer returns (HTTP 200, is_error true).
func ToolError(msg string) *mcpflow.ToolResult { return textResult(msg, true) }

// textResult is a result with one text block.
func textResult(text string, isError bool) *mcpflow.ToolResult {
	b, _ := json.Marshal(mcp.NewTextContent(text))
	return &mcpflow.ToolResult{Content: []json.RawMessage{b}, IsError: isError}
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
		// Numbers as json.Number: an integer beyond 2^53 reaches the agent
		// as the server wrote it, as arguments reach the server.
		var v any
		if err := mcpflow.DecodeExact(res.RawStructuredContent, &v); err == nil {
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
