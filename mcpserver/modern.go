package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpflow/mcpflow"
)

// Protocol 2026-07-28 (stateless): each request carries its revision and
// the client's capabilities and identity in params._meta, and Mcp-Method
// (and Mcp-Name) headers; no initialize, no session.

// ProtocolVersion2026 is the stateless revision.
const ProtocolVersion2026 = mcp.ProtocolVersion20260728

// ModernProtocolVersions are the stateless revisions the endpoint serves.
var ModernProtocolVersions = []string{ProtocolVersion2026}

// ExtTasks is the Tasks extension (SEP-2663) the endpoint serves to
// 2026-07-28 clients that declare it on a request.
const ExtTasks = "io.modelcontextprotocol/tasks"

// Headers and _meta keys of 2026-07-28.
const (
	headerMethod      = mcp.HeaderMethod
	headerName        = mcp.HeaderName
	metaProtocol      = mcp.MetaKeyProtocolVersion
	metaClientCaps    = mcp.MetaKeyClientCapabilities
	metaClientInfo    = mcp.MetaKeyClientInfo
	metaServerInfo    = mcp.MetaKeyServerInfo
	metaSubscription  = mcp.MetaKeySubscriptionID
	resultComplete    = "complete"
	resultTask        = "task"
	cacheScopePrivate = "private"
)

// JSON-RPC error codes of 2026-07-28.
const (
	codeHeaderMismatch      = mcp.HEADER_MISMATCH                    // -32020
	codeMissingCapability   = mcp.MISSING_REQUIRED_CLIENT_CAPABILITY // -32021
	codeUnsupportedProtocol = mcp.UNSUPPORTED_PROTOCOL_VERSION       // -32022
)

// allProtocolVersions are every revision the endpoint serves, newest
// first: server/discover's supportedVersions and -32022's data.supported.
var allProtocolVersions = append(slices.Clone(ModernProtocolVersions), SupportedProtocolVersions...)

// surfaceModern names a 2026-07-28 request in the audit log.
const surfaceModern = "mcp " + ProtocolVersion2026

// envelope is a 2026-07-28 request's per-request _meta.
type envelope struct {
	version    string          // io.modelcontextprotocol/protocolVersion ("" when absent)
	hasVersion bool            // the key is present
	caps       json.RawMessage // io.modelcontextprotocol/clientCapabilities
	meta       map[string]json.RawMessage
	name       *string // params.name, read in the same pass (Mcp-Name of tools/call)
	taskID     *string // params.taskId (Mcp-Name of tasks/*)
}

// envelope reads _meta and reports whether the request is 2026-07-28: its
// _meta names a revision, or its MCP-Protocol-Version header names one of
// ModernProtocolVersions (any other goes the 2025-11-25 way, which refuses
// a version it does not speak).
func (m *message) envelope(r *http.Request) (envelope, bool) {
	env := envelope{meta: m.Params.Meta, caps: m.Params.Meta[metaClientCaps], name: m.Params.Name, taskID: m.Params.TaskID}
	if raw, ok := env.meta[metaProtocol]; ok {
		env.hasVersion = true
		env.version, _ = rawString(raw)
	}
	return env, env.hasVersion || slices.Contains(ModernProtocolVersions, r.Header.Get(HeaderProtocolVersion))
}

// modernError is a refusal of a 2026-07-28 request with its HTTP status.
type modernError struct {
	status int
	err    *rpcError
}

func refuse(status, code int, data any, format string, args ...any) *modernError {
	e := &rpcError{Code: code, Message: fmt.Sprintf(format, args...), Data: data}
	return &modernError{status: status, err: e}
}

// checkModern validates a 2026-07-28 request in the order the revision
// and its conformance suite expect: the protocol version header against
// _meta, the required _meta keys, the version, the Mcp-Method and Mcp-Name
// headers, then the method.
func (s *Server) checkModern(r *http.Request, msg *message, env envelope) *modernError {
	header := r.Header.Get(HeaderProtocolVersion)
	switch {
	case !env.hasVersion:
		return refuse(http.StatusBadRequest, mcp.INVALID_PARAMS, nil,
			"params._meta[%q] is required in protocol %s (or send initialize for an earlier revision)", metaProtocol, truncate(header, 40))
	case header == "":
		return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "the %s header is required: it must equal params._meta[%q]", HeaderProtocolVersion, metaProtocol)
	case header != env.version:
		return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "Header mismatch: %s header value %q does not match params._meta[%q] value %q",
			HeaderProtocolVersion, truncate(header, 40), metaProtocol, truncate(env.version, 40))
	}
	if !isJSONObject(env.caps) {
		return refuse(http.StatusBadRequest, mcp.INVALID_PARAMS, nil, "params._meta[%q] is required and must be an object", metaClientCaps)
	}
	if info, ok := env.meta[metaClientInfo]; ok && !isJSONObject(info) && !bytes.Equal(bytes.TrimSpace(info), []byte("null")) {
		return refuse(http.StatusBadRequest, mcp.INVALID_PARAMS, nil, "params._meta[%q] must be an object", metaClientInfo)
	}
	if !slices.Contains(ModernProtocolVersions, env.version) {
		return refuse(http.StatusBadRequest, codeUnsupportedProtocol,
			map[string]any{"supported": allProtocolVersions, "requested": env.version},
			"Unsupported protocol version %q: this server speaks %s", truncate(env.version, 40), strings.Join(allProtocolVersions, ", "))
	}
	if got := strings.TrimSpace(r.Header.Get(headerMethod)); got != msg.Method {
		if got == "" {
			return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "the %s header is required", headerMethod)
		}
		return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "Header mismatch: %s header value %q does not match the body's method %q",
			headerMethod, truncate(got, 60), truncate(msg.Method, 60))
	}
	if want, named := nameOf(msg.Method, env); named {
		got, present := r.Header[http.CanonicalHeaderKey(headerName)]
		if !present || len(got) == 0 {
			return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "the %s header is required for %s", headerName, msg.Method)
		}
		decoded, ok := mcp.DecodeHeaderValue(strings.TrimSpace(got[0]))
		if !ok {
			return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "Header mismatch: %s header is not valid Base64", headerName)
		}
		if decoded != want {
			return refuse(http.StatusBadRequest, codeHeaderMismatch, nil, "Header mismatch: %s header value %q does not match the body's %q",
				headerName, truncate(decoded, 100), truncate(want, 100))
		}
	}
	if _, ok := modernHandlers[msg.Method]; !ok {
		return refuse(http.StatusNotFound, mcp.METHOD_NOT_FOUND, nil, "Method not found: %s", truncate(msg.Method, 100))
	}
	return nil
}

// nameOf returns what a request's Mcp-Name header must carry: the tool of
// a tools/call, the task of a tasks/* request.
func nameOf(method string, env envelope) (string, bool) {
	switch method {
	case string(mcp.MethodToolsCall):
		if env.name != nil {
			return *env.name, true
		}
		return "", true
	case string(mcp.MethodTasksGet), "tasks/update", string(mcp.MethodTasksCancel):
		if env.taskID != nil {
			return *env.taskID, true
		}
		return "", true
	}
	return "", false
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// needTasksExt is the -32021 of a request that needs the Tasks extension
// without declaring it.
func needTasksExt(method string) *modernError {
	return refuse(http.StatusBadRequest, codeMissingCapability,
		map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}},
		"%s needs the %s extension: declare it in params._meta[%q].extensions", method, ExtTasks, metaClientCaps)
}

// modern serves a 2026-07-28 request.
func (s *Server) modern(w http.ResponseWriter, r *http.Request, req *mcpflow.MCPRequest, msg *message, env envelope) {
	if !msg.isRequest() {
		if msg.isNotification() {
			w.WriteHeader(http.StatusAccepted) // none is defined over HTTP; nothing to do
			return
		}
		writeHTTPError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST, "protocol 2026-07-28 takes requests and notifications only")
		return
	}
	if msg.Method == string(mcp.MethodInitialize) {
		writeJSON(w, http.StatusNotFound, newResponse(msg.ID, nil, methodNotFound(
			"initialize does not exist in protocol %s: send requests with params._meta (server/discover describes this server)", env.version)))
		return
	}
	if e := s.checkModern(r, msg, env); e != nil {
		writeJSON(w, e.status, newResponse(msg.ID, nil, e.err))
		return
	}
	c := &call{s: s, w: w, r: r, req: req, msg: msg, capsRaw: env.caps, modern: true,
		surface: surfaceModern, clientInfo: env.meta[metaClientInfo]}
	c.serve(r.Context(), modernHandlers[msg.Method])
}

// modernResult stamps a result for 2026-07-28: resultType (complete unless
// it names its own) and the server's identity in _meta.
func (s *Server) modernResult(v any) any {
	if r, ok := v.(callToolResult); ok {
		// A tool's result (the common answer), stamped without re-encoding.
		if len(r.Meta) == 0 && s.infoMeta != nil {
			return modernCallResult{callToolResult: r, ResultType: resultComplete, Meta: s.infoMeta()}
		}
		meta := make(map[string]any, len(r.Meta)+1)
		for k, x := range r.Meta {
			meta[k] = x
		}
		meta[metaServerInfo] = mcp.Implementation{Name: serverName, Version: s.opts.Version}
		return modernCallResult{callToolResult: r, ResultType: resultComplete, Meta: meta}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = json.RawMessage(`"` + resultComplete + `"`)
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	info, _ := json.Marshal(mcp.Implementation{Name: serverName, Version: s.opts.Version})
	meta[metaServerInfo] = info
	m["_meta"], _ = json.Marshal(meta)
	return m
}

// modernCallResult is a tool's result as 2026-07-28 answers it; its Meta
// hides the embedded result's.
type modernCallResult struct {
	callToolResult
	ResultType string `json:"resultType"`
	Meta       any    `json:"_meta"` // a map, or the server's identity encoded (infoMeta)
}

// discover answers server/discover: the revisions served, the capabilities
// (tools; the Tasks extension when the task runtime runs here), the
// thread's routing hints as instructions, and cache hints (per user and
// thread, so private; not cached, as the configuration may change).
func (c *call) discover(ctx context.Context) (any, *rpcError) {
	s, req := c.s, c.req
	caps := map[string]any{"tools": map[string]any{}, "logging": map[string]any{}}
	if s.tasksEnabled() {
		caps["extensions"] = map[string]any{ExtTasks: map[string]any{}}
	}
	if s.hasSurface() {
		changes := map[string]any{"listChanged": true} // through subscriptions/listen
		caps["prompts"], caps["resources"], caps["completions"] = changes, changes, map[string]any{}
	}
	res := map[string]any{"supportedVersions": allProtocolVersions, "capabilities": caps, "ttlMs": 0, "cacheScope": cacheScopePrivate}
	if tools, err := s.opts.Tools.ListTools(ctx, req.UserID, req.ThreadID); err == nil {
		if hints := s.opts.Tools.RoutingHints(tools); hints != "" {
			res["instructions"] = hints
		}
	} else {
		s.log.Warn("MCP server/discover: could not list the thread's tools for the instructions", "request_id", c.requestID(), "error", err)
	}
	return res, nil
}
