package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// _meta keys of a tools/call that mcpflow reads.
const (
	// MetaSecrets carries request-scoped secrets (headers_from_context),
	// an object of key → string value, like the REST body's "secrets".
	MetaSecrets = "io.mcpflow/secrets"
	// MetaRunID and MetaToolCallID are the REST body's run_id and
	// tool_call_id (stored with a durable task).
	MetaRunID      = "io.mcpflow/run_id"
	MetaToolCallID = "io.mcpflow/tool_call_id"
	// MetaIdempotencyKey is a durable submit's idempotency key, like the
	// REST header Idempotency-Key (mcpflow.ToolCall.IdempotencyKey).
	MetaIdempotencyKey = mcpflow.IdempotencyKeyMeta
	// metaRelatedTask and metaImmediateResponse are the spec's keys.
	metaRelatedTask       = "io.modelcontextprotocol/related-task"
	metaImmediateResponse = "io.modelcontextprotocol/model-immediate-response"
)

// serverName is serverInfo.name.
const serverName = "mcpflow"

type capabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Tasks       *mcp.TasksCapability `json:"tasks,omitempty"`
	Prompts     *resourcesCap        `json:"prompts,omitempty"`
	Resources   *resourcesCap        `json:"resources,omitempty"`
	Completions *struct{}            `json:"completions,omitempty"`
	Logging     struct{}             `json:"logging"`
}

type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    capabilities       `json:"capabilities"`
	ServerInfo      mcp.Implementation `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// initialize negotiates the protocol revision, creates the session in the
// store and answers with its id in Mcp-Session-Id.
func (s *Server) initialize(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest, msg *message) {
	c := &call{s: s, w: w, r: r, req: req, msg: msg}
	if msg.paramsErr != nil {
		writeJSON(w, http.StatusOK, newResponse(msg.ID, nil, msg.paramsErr))
		return
	}
	p := msg.Params
	for _, raw := range []*json.RawMessage{&p.ClientInfo, &p.Capabilities} {
		if len(*raw) > 0 && string(*raw) != "null" && (*raw)[0] != '{' {
			writeJSON(w, http.StatusOK, newResponse(msg.ID, nil, invalidParams("clientInfo and capabilities must be objects")))
			return
		}
		*raw = compactJSON(*raw)
	}
	if n := len(p.ClientInfo) + len(p.Capabilities); n > MaxClientDataBytes {
		writeJSON(w, http.StatusOK, newResponse(msg.ID, nil, invalidParams("clientInfo and capabilities must be at most %d bytes together as compact JSON (got %d)", MaxClientDataBytes, n)))
		return
	}
	version := LatestProtocolVersion
	if slices.Contains(SupportedProtocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	ctx := r.Context()
	sess := &mcpflow.MCPSession{ID: newSessionID(), UserID: req.UserID, ThreadID: req.ThreadID, ProtocolVersion: version,
		ClientInfo: nullToEmpty(p.ClientInfo), ClientCapabilities: nullToEmpty(p.Capabilities), CreatedAt: s.now()}
	if err := s.opts.Sessions.CreateMCPSession(ctx, sess); err != nil {
		s.log.Error("could not create an MCP session", "request_id", c.requestID(), "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, msg.ID, mcp.INTERNAL_ERROR, "the MCP session could not be created; retry shortly")
		return
	}
	s.sessions.put(s.newSession(sess), s.now())
	s.evictSessions(ctx, req.UserID, c.requestID())
	s.pruneSessions()

	res := initializeResult{ProtocolVersion: version, ServerInfo: mcp.Implementation{Name: serverName, Version: s.opts.Version}}
	if s.tasksEnabled() {
		res.Capabilities.Tasks = mcp.NewTasksCapability()
	}
	if s.hasSurface() {
		res.Capabilities.Prompts, res.Capabilities.Completions = &resourcesCap{ListChanged: true}, &struct{}{}
		res.Capabilities.Resources = &resourcesCap{Subscribe: true, ListChanged: true}
	}
	// The routing hints of the thread's tools are the server's
	// instructions; a listing that fails now fails again at tools/list,
	// where the client sees why.
	if tools, err := s.opts.Tools.ListTools(ctx, req.UserID, req.ThreadID); err == nil {
		res.Instructions = s.opts.Tools.RoutingHints(tools)
	} else {
		s.log.Warn("MCP initialize: could not list the thread's tools for the instructions", "request_id", c.requestID(), "error", err)
	}
	w.Header().Set(HeaderSessionID, sess.ID)
	writeJSON(w, http.StatusOK, newResponse(msg.ID, res, nil))
}

// evictSessions ends the user's least recently used sessions beyond
// MaxSessionsPerUser (database-wide: sessions live in the store, and any
// replica serves them). An ended session answers 404 (-32001), which tells
// its client to initialize again. A failure is logged: the new session
// stands, and the next initialize evicts.
func (s *Server) evictSessions(ctx context.Context, user, requestID string) {
	ids, err := s.opts.Sessions.EvictMCPSessions(ctx, user, s.opts.MaxSessionsPerUser)
	if len(ids) > 0 {
		s.forgetSessions(ids...)
		s.log.Info("ended the least recently used MCP sessions of a user over server.max_mcp_sessions_per_user",
			"request_id", requestID, "user_id", user, "count", len(ids), "max", s.opts.MaxSessionsPerUser)
	}
	if err != nil {
		s.log.Warn("could not end MCP sessions over server.max_mcp_sessions_per_user", "request_id", requestID, "error", err)
	}
}

// compactJSON is raw without insignificant space (raw itself when it is
// not valid JSON: the params decoding already refused that).
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func nullToEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// toolJSON is a tool as tools/list shows it.
type toolJSON struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// optionalTask is the execution of a durable task tool to 2025-11-25
// clients.
var optionalTask, _ = json.Marshal(mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional})

// emptySchema stands in for a tool without an input schema: MCP requires
// an object schema.
var emptySchema = json.RawMessage(`{"type":"object"}`)

func (c *call) listTools(ctx context.Context) (any, *rpcError) {
	if c.msg.paramsErr != nil {
		return nil, c.msg.paramsErr
	}
	if p := c.msg.Params.Cursor; p != nil && *p != "" {
		// The listing is one page: no cursor was ever handed out.
		return nil, invalidParams("invalid cursor: tools/list answers in one page")
	}
	tools, err := c.s.opts.Tools.ListTools(ctx, c.req.UserID, c.req.ThreadID)
	if err != nil {
		return nil, c.domainError("list tools", err)
	}
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		tj := toolJSON{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			OutputSchema: t.OutputSchema, Annotations: t.Annotations, Icons: t.Icons, Meta: t.Meta}
		if len(tj.InputSchema) == 0 || string(tj.InputSchema) == "null" {
			tj.InputSchema = emptySchema
		}
		switch {
		case c.modern:
			// 2026-07-28 has no execution field: the server decides per
			// call (the Tasks extension).
		case t.TaskToolset != nil && c.s.tasksEnabled():
			tj.Execution = optionalTask
		case t.TaskToolset == nil:
			tj.Execution = t.Execution
		}
		out = append(out, tj)
	}
	if c.modern {
		// Per user and thread (private); not cached, as the
		// configuration may change at any time.
		return map[string]any{"tools": out, "ttlMs": 0, "cacheScope": cacheScopePrivate}, nil
	}
	return map[string]any{"tools": out}, nil
}

// callToolResult is a CallToolResult on the wire.
type callToolResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

func textContent(text string) json.RawMessage {
	b, _ := json.Marshal(mcp.NewTextContent(text))
	return b
}

// callTool runs a tools/call: an ordinary call through the runtime
// (relaying progress and questions), or a durable tool's call as a task.
func (c *call) callTool(ctx context.Context) (any, *rpcError) {
	if c.msg.paramsErr != nil {
		return nil, c.msg.paramsErr
	}
	args, rerr := c.msg.callArguments()
	if rerr != nil {
		return nil, rerr
	}
	var name string
	if c.msg.Params.Name != nil {
		name = *c.msg.Params.Name
	}
	if name == "" {
		return nil, invalidParams("name is required")
	}
	tc := mcpflow.ToolCall{UserID: c.req.UserID, ThreadID: c.req.ThreadID, Tool: name, RawArguments: args}
	if err := readMeta(c.msg.Params.Meta, &tc); err != nil {
		return nil, err
	}
	tool, rerr := c.durableTool(ctx, name)
	if rerr != nil || c.answered {
		return nil, rerr
	}
	release, ok := slot(c.req.AcquireCall)
	if !ok {
		tooMany(c.w, c.msg.ID, "too many tool calls in flight for this user (server.max_concurrent_calls_per_user); retry shortly")
		c.answered = true
		return nil, nil
	}
	if tool == nil {
		tc.Relay = c.relay()
	}
	res, err := c.s.opts.Tools.CallTool(c.origin(ctx), tc)
	release()
	if err != nil {
		return c.callFailed(ctx, err, name, tool)
	}
	return c.callResult(ctx, res, tool)
}

// durableTool is the tool whose call runs as a durable task, nil for an
// ordinary call. In 2026-07-28 the server decides: a durable tool's call
// is a task (resultType "task") for a client that declares the Tasks
// extension on this request; params.task is ignored. In 2025-11-25 the
// client asks with params.task (task augmentation).
func (c *call) durableTool(ctx context.Context, name string) (*mcpflow.Tool, *rpcError) {
	if c.modern {
		t, err := c.s.lookupTool(ctx, c.req, name)
		if err != nil {
			return nil, c.domainError("list tools", err)
		}
		if t == nil {
			return nil, nil
		}
		if e := c.checkParamHeaders(t); e != nil {
			return c.refuseTool(e)
		}
		if t.TaskToolset != nil && c.s.tasksEnabled() && c.caps().tasksExt {
			return t, nil
		}
		return nil, nil
	}
	if c.msg.Params.Task == nil {
		return nil, nil
	}
	if !c.s.tasksEnabled() {
		return nil, methodNotFound("task augmentation is not supported: durable tasks are not enabled on this mcpflow")
	}
	t, err := c.s.lookupTool(ctx, c.req, name)
	if err != nil {
		return nil, c.domainError("list tools", err)
	}
	if t == nil {
		return nil, invalidParams("Unknown tool: %s", truncate(name, 200))
	}
	if t.TaskToolset == nil {
		return nil, methodNotFound("Tool '%s' does not support task augmentation: only durable task tools (execution.taskSupport \"optional\") do", name)
	}
	return t, nil
}

// refuseTool answers a refusal of a tools/call (c.answered).
func (c *call) refuseTool(e *modernError) (*mcpflow.Tool, *rpcError) {
	_, _ = c.refuse(e)
	return nil, nil
}

// refuseTooMany answers a refusal over a per-user cap (running durable tasks,
// pinned sessions) or a rate limit of the policies: 429 like the cap on
// calls in flight, with its message, and when to retry.
func (c *call) refuseTooMany(err error) (any, *rpcError) {
	re := &rpcError{Code: codeTooMany, Message: mcpflow.ErrorMessage(err)}
	if d := mcpflow.RetryAfterOf(err); d > 0 {
		secs := int(math.Ceil(d.Seconds()))
		c.w.Header().Set("Retry-After", strconv.Itoa(secs))
		re.Data = map[string]int{"retryAfterSeconds": secs}
	} else {
		c.w.Header().Set("Retry-After", retryAfterCap)
	}
	return c.refuse(&modernError{status: http.StatusTooManyRequests, err: re})
}

// callFailed answers a call the runtime failed: cancelled, an unknown
// tool, a per-user cap (429), the MCP server's own JSON-RPC error for the
// client (as it is), else the failure as the tool's error result (a
// JSON-RPC error for a 2025-11-25 task-augmented call).
func (c *call) callFailed(ctx context.Context, err error, name string, tool *mcpflow.Tool) (any, *rpcError) {
	if ctx.Err() == context.Canceled {
		// notifications/cancelled, or the client went away.
		return nil, &rpcError{Code: codeRequestCancelled, Message: "request cancelled"}
	}
	switch mcpflow.ErrorCode(err) {
	case mcpflow.ENotFound:
		return nil, invalidParams("Unknown tool: %s", truncate(name, 200))
	case mcpflow.ETooMany:
		return c.refuseTooMany(err)
	}
	var relayed *mcpflow.RPCError
	if errors.As(err, &relayed) {
		// The MCP server's own answer for the client (-32021: a
		// capability the client did not declare), as it is.
		status := http.StatusOK
		if c.modern && relayed.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			status = http.StatusBadRequest
		}
		re := &rpcError{Code: relayed.Code, Message: relayed.Message}
		if len(relayed.Data) > 0 {
			re.Data = relayed.Data
		}
		return c.refuse(&modernError{status: status, err: re})
	}
	msg := c.failureText("call tool", err)
	if tool != nil && !c.modern {
		return nil, &rpcError{Code: codeToolFailed, Message: msg}
	}
	return callToolResult{Content: []json.RawMessage{textContent(msg)}, IsError: true}, nil
}

// callResult is the answer of a call the runtime ran: a task's
// CreateTaskResult, the server's input_required answer (2026-07-28, as it
// is), or the tool's result.
func (c *call) callResult(ctx context.Context, res *mcpflow.ToolResult, tool *mcpflow.Tool) (any, *rpcError) {
	if c.modern && res.Task != "" && (tool != nil || (c.s.tasksEnabled() && c.caps().tasksExt)) {
		// A durable tool's call, or an ordinary call the server answered
		// with a task that mcpflow now tracks.
		return c.createTaskResultExt(ctx, res)
	}
	if tool != nil {
		return c.createTaskResult(ctx, res)
	}
	if len(res.InputRequired) > 0 {
		// The server asks the client (2026-07-28): its answer as it is.
		return res.InputRequired, nil
	}
	out := callToolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// lookupTool returns the tool name of the request's thread as the listing
// has it, nil when it has none: by the runtime's lookup where it has one,
// else from the listing.
func (s *Server) lookupTool(ctx context.Context, req *mcpflow.MCPRequest, name string) (*mcpflow.Tool, error) {
	if l, ok := s.opts.Tools.(mcpflow.ToolLookup); ok {
		return l.LookupTool(ctx, req.UserID, req.ThreadID, name)
	}
	tools, err := s.opts.Tools.ListTools(ctx, req.UserID, req.ThreadID)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(tools, func(t mcpflow.Tool) bool { return t.Name == name }); i >= 0 {
		return &tools[i], nil
	}
	return nil, nil
}

// checkParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call against its arguments, for the parameters the tool's input
// schema binds to headers (x-mcp-header): a missing, undecodable or
// different header is -32020 with 400.
func (c *call) checkParamHeaders(t *mcpflow.Tool) *modernError {
	if !bytes.Contains(t.InputSchema, []byte("x-mcp-header")) {
		return nil
	}
	mt := mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema}
	params := []byte(`{}`) // what the check reads of params: the arguments
	if args := c.msg.Params.Arguments; len(args) > 0 {
		params = append(append([]byte(`{"arguments":`), args...), '}')
	}
	err := mcp.ValidateParamHeadersLookup(func(name string) (string, bool) {
		v, ok := c.r.Header[http.CanonicalHeaderKey(name)]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}, &mt, params)
	if err != nil {
		return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "Header mismatch: %s", err.Error())
	}
	return nil
}

// readMeta takes mcpflow's keys from a tools/call's _meta.
func readMeta(meta map[string]json.RawMessage, tc *mcpflow.ToolCall) *rpcError {
	if raw, ok := meta[MetaSecrets]; ok && !isNull(raw) {
		var obj map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return invalidParams("_meta[%q] must be an object of string values", MetaSecrets)
		}
		tc.Secrets = make(map[string]string, len(obj))
		for k, val := range obj {
			str, ok := rawString(val)
			if !ok {
				return invalidParams("_meta[%q].%s must be a string", MetaSecrets, truncate(k, 100))
			}
			tc.Secrets[k] = str
		}
	}
	for _, f := range []struct {
		key string
		max int
		dst **string
	}{{MetaRunID, 64, &tc.RunID}, {MetaToolCallID, 128, &tc.ToolCallID}} {
		raw, ok := meta[f.key]
		if !ok || isNull(raw) {
			continue
		}
		str, ok := rawString(raw)
		if !ok || str == "" || utf8.RuneCountInString(str) > f.max {
			return invalidParams("_meta[%q] must be a string of 1 to %d characters", f.key, f.max)
		}
		*f.dst = &str
	}
	if raw, ok := meta[MetaIdempotencyKey]; ok && !isNull(raw) {
		key, ok := rawString(raw)
		if !ok {
			return invalidParams("_meta[%q] must be a string", MetaIdempotencyKey)
		}
		if problem := mcpflow.IdempotencyKeyProblem(key); problem != "" {
			return invalidParams("_meta[%q] %s", MetaIdempotencyKey, problem)
		}
		tc.IdempotencyKey = key
	}
	return nil
}

// failureText is what the client sees of a failed call: the domain
// error's caller-safe message; internal errors are logged and shown as a
// fixed text.
func (c *call) failureText(what string, err error) string {
	if mcpflow.ErrorCode(err) == mcpflow.EInternal {
		c.s.log.Error("MCP endpoint: "+what+" failed", "request_id", c.requestID(), "method", c.msg.Method, "error", err)
		return "mcpflow could not complete this call (an internal error; the server's log has the details)"
	}
	return mcpflow.ErrorMessage(err)
}

// domainError turns a domain error into a JSON-RPC error.
func (c *call) domainError(what string, err error) *rpcError {
	return internalError("%s", c.failureText(what, err))
}
