package mcpserver

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// One handler per method in a table per revision, over call's shared core;
// legacy and modern check what their revision asks of a request.

// handler answers one method: a result (stamped for the revision by
// serve) or a JSON-RPC error, both with HTTP 200, unless it wrote the
// answer itself (call.answered: a refusal with another status, a stream).
type handler func(c *call, ctx context.Context) (any, *rpcError)

// legacyHandlers are the requests of a 2025-11-25 session (initialize has
// no session yet: legacy routes it first).
var legacyHandlers = map[string]handler{
	string(mcp.MethodPing):                   func(*call, context.Context) (any, *rpcError) { return struct{}{}, nil },
	string(mcp.MethodToolsList):              (*call).listTools,
	string(mcp.MethodToolsCall):              tracked((*call).callTool),
	string(mcp.MethodTasksGet):               withTasks((*call).getTask),
	string(mcp.MethodTasksList):              withTasks((*call).listTasks),
	string(mcp.MethodTasksCancel):            withTasks((*call).cancelTask),
	string(mcp.MethodTasksResult):            withTasks(tracked((*call).taskResult)),
	string(mcp.MethodSetLogLevel):            (*call).setLevel,
	string(mcp.MethodResourcesSubscribe):     surfaced(subscribe),
	string(mcp.MethodResourcesUnsubscribe):   surfaced(unsubscribe),
	string(mcp.MethodPromptsList):            listing("prompts", mcpflow.SurfaceRuntime.ListPrompts),
	string(mcp.MethodPromptsGet):             surfaced(getPrompt),
	string(mcp.MethodResourcesList):          listing("resources", mcpflow.SurfaceRuntime.ListResources),
	string(mcp.MethodResourcesTemplatesList): listing("resourceTemplates", mcpflow.SurfaceRuntime.ListResourceTemplates),
	string(mcp.MethodResourcesRead):          surfaced(readResource),
	string(mcp.MethodCompletionComplete):     surfaced(complete),
}

// modernHandlers are the methods a 2026-07-28 request may name; tasks/*
// need the Tasks extension declared (subscriptions/listen checks it for
// its task ids).
var modernHandlers = map[string]handler{
	"server/discover":                        (*call).discover,
	string(mcp.MethodToolsList):              (*call).listTools,
	string(mcp.MethodToolsCall):              (*call).callTool,
	"subscriptions/listen":                   (*call).listen,
	string(mcp.MethodTasksGet):               withTasksExt((*call).getTaskExt),
	"tasks/update":                           withTasksExt((*call).updateTaskExt),
	string(mcp.MethodTasksCancel):            withTasksExt((*call).cancelTaskExt),
	string(mcp.MethodPromptsList):            listing("prompts", mcpflow.SurfaceRuntime.ListPrompts),
	string(mcp.MethodPromptsGet):             surfaced(getPrompt),
	string(mcp.MethodResourcesList):          listing("resources", mcpflow.SurfaceRuntime.ListResources),
	string(mcp.MethodResourcesTemplatesList): listing("resourceTemplates", mcpflow.SurfaceRuntime.ListResourceTemplates),
	string(mcp.MethodResourcesRead):          surfaced(readResource),
	string(mcp.MethodCompletionComplete):     surfaced(complete),
}

// tracked makes a long request cancellable by notifications/cancelled.
func tracked(h handler) handler {
	return func(c *call, ctx context.Context) (any, *rpcError) {
		ctx, done := c.s.track(ctx, c.session, c.msg.ID)
		defer done()
		return h(c, ctx)
	}
}

// withTasks answers -32601 to tasks/* (2025-11-25) without a task runtime.
func withTasks(h handler) handler {
	return func(c *call, ctx context.Context) (any, *rpcError) {
		if !c.s.tasksEnabled() {
			return nil, methodNotFound("%s: durable tasks are not enabled on this mcpflow (mcp_tasks.enabled)", c.msg.Method)
		}
		return h(c, ctx)
	}
}

// withTasksExt refuses tasks/* (2026-07-28) without a task runtime (404)
// or from a client that does not declare the Tasks extension (-32021).
func withTasksExt(h handler) handler {
	return func(c *call, ctx context.Context) (any, *rpcError) {
		switch {
		case !c.s.tasksEnabled():
			return c.refuse(refuse(http.StatusNotFound, mcp.METHOD_NOT_FOUND, nil, "%s: durable tasks are not enabled on this mcpflow (mcp_tasks.enabled)", c.msg.Method))
		case !c.caps().tasksExt:
			return c.refuse(needTasksExt(c.msg.Method))
		}
		return h(c, ctx)
	}
}

// serve runs the method's handler and answers: its result, stamped for
// 2026-07-28 (modernResult), or its JSON-RPC error, with HTTP 200, unless
// the handler answered itself.
func (c *call) serve(ctx context.Context, h handler) {
	result, rerr := h(c, ctx)
	switch {
	case c.answered:
	case rerr != nil:
		c.reply(http.StatusOK, newResponse(c.msg.ID, nil, rerr))
	case c.modern:
		c.reply(http.StatusOK, newResponse(c.msg.ID, c.s.modernResult(result), nil))
	default:
		c.reply(http.StatusOK, newResponse(c.msg.ID, result, nil))
	}
}

// refuse answers a refusal with its HTTP status, for a handler to return.
func (c *call) refuse(e *modernError) (any, *rpcError) {
	c.reply(e.status, newResponse(c.msg.ID, nil, e.err))
	c.answered = true
	return nil, nil
}

// legacy serves a message of the earlier revisions: initialize, a
// response to a request of mcpflow's, or a session's notification or
// request.
func (s *Server) legacy(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest, msg *message) {
	switch {
	case msg.isRequest() && msg.Method == string(mcp.MethodInitialize):
		s.initialize(w, r, req, msg)
		return
	case msg.isRequest() && msg.Method == "server/discover":
		// Without a 2026-07-28 _meta: not a request of that revision.
		writeJSON(w, http.StatusOK, newResponse(msg.ID, nil, methodNotFound(
			"server/discover needs params._meta[%q] = %q (protocol %s); earlier revisions send initialize", metaProtocol, ProtocolVersion2026, ProtocolVersion2026)))
		return
	case !msg.isRequest() && !msg.isNotification():
		s.response(w, r, req, msg)
		return
	}
	sess, ok := s.requireSession(w, r, req, msg.ID)
	if !ok {
		return
	}
	if msg.isNotification() {
		if msg.Method == "notifications/cancelled" {
			s.cancelInflight(sess.ID, msg.Params.RequestID)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h, ok := legacyHandlers[msg.Method]
	if !ok {
		h = func(c *call, _ context.Context) (any, *rpcError) {
			return nil, methodNotFound("Method not found: %s", truncate(c.msg.Method, 100))
		}
	}
	c := &call{s: s, w: w, r: r, req: req, msg: msg, capsRaw: sess.ClientCapabilities, capsInfo: sess.caps, session: sess.ID,
		logLevel: sess.LogLevel, surface: "mcp " + sess.ProtocolVersion, clientInfo: sess.ClientInfo}
	c.serve(r.Context(), h)
}

// response takes a response to a request of mcpflow's (a relayed request,
// or an elicitation of a task's question) on its session: 202, or the
// refusal of an answer that was not delivered.
func (s *Server) response(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest, msg *message) {
	if msg.Method == "" && !hasID(msg.ID) && msg.Result == nil && msg.Error == nil {
		writeHTTPError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "not a JSON-RPC request, notification or response")
		return
	}
	if id, ok := relayID(msg.ID); ok {
		sess, ok := s.requireSession(w, r, req, nil)
		if !ok {
			return
		}
		req.Method = "relayed response"
		s.answerRelayed(w, sess.MCPSession, id, msg)
		return
	}
	if task, question := elicitationTask(msg.ID); task != "" {
		sess, ok := s.requireSession(w, r, req, nil)
		if !ok {
			return
		}
		req.Method = "elicitation response"
		if r := s.answerElicitation(r.Context(), sess.MCPSession, task, question, msg, w.Header().Get("X-Request-ID")); r != nil {
			// Not delivered, for a reason the client sees.
			if r.retryAfter != "" {
				w.Header().Set("Retry-After", r.retryAfter)
			}
			writeJSON(w, r.status, newResponse(nil, nil, r.err))
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
}
