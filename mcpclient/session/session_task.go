package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

// Native MCP Tasks requests (2025-11-25) go out as raw JSON-RPC rather
// than mcp-go's typed calls, which lose error codes and exact result bytes.
// A JSON-RPC error answer is returned as such, not as a Go error.

// sessTaskSeq numbers the requests a session sends itself (string ids,
// never colliding with mcp-go's integer ones).
var sessTaskSeq atomic.Uint64

// CallToolTask sends a task-augmented tools/call (params.task = {}) and
// returns the raw result or the server's JSON-RPC error; meta, bounds,
// BeforeSend and errors are CallTool's.
func (s *Session) CallToolTask(ctx context.Context, name string, args, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	p := callParams(ctx, name, args, meta)
	p.Task = &mcp.TaskParams{}
	return s.taskRequest(ctx, s.toolRequest(name), mcp.MethodToolsCall, p, true, true)
}

// GetTask sends tasks/get for taskID; see TaskResult.
func (s *Session) GetTask(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.taskMethod(ctx, mcp.MethodTasksGet, taskID, meta)
}

// TaskResult sends tasks/result for taskID with meta as its _meta and
// returns the raw result or the server's JSON-RPC error, bounded by ctx
// and tool_call_timeout; errors are classified like CallTool's.
func (s *Session) TaskResult(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.taskMethod(ctx, mcp.MethodTasksResult, taskID, meta)
}

// AwaitTaskResult is TaskResult bounded by ctx only: it stays open while
// the task runs, for the questions the server sends on its stream.
func (s *Session) AwaitTaskResult(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	params, req := s.taskParams(mcp.MethodTasksResult, taskID, meta)
	return s.taskRequest(ctx, req, mcp.MethodTasksResult, params, false, false)
}

// UpdateTask sends tasks/update (2026-07-28) with the answers to the
// task's input requests; see TaskResult.
func (s *Session) UpdateTask(ctx context.Context, taskID string, responses map[string]json.RawMessage, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	params, req := s.taskParams("tasks/update", taskID, meta)
	params["inputResponses"] = responses
	return s.taskRequest(ctx, req, "tasks/update", params, false, true)
}

// CancelTask sends tasks/cancel for taskID; see TaskResult.
func (s *Session) CancelTask(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.taskMethod(ctx, mcp.MethodTasksCancel, taskID, meta)
}

// taskMethod sends one of the tasks/* requests that take {"taskId"}.
func (s *Session) taskMethod(ctx context.Context, method mcp.MCPMethod, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	params, req := s.taskParams(method, taskID, meta)
	return s.taskRequest(ctx, req, method, params, false, true)
}

// taskParams are a tasks/* request's params and how its errors are named.
func (s *Session) taskParams(method mcp.MCPMethod, taskID string, meta map[string]any) (map[string]any, sessRequest) {
	params := map[string]any{"taskId": taskID}
	if len(meta) > 0 {
		params["_meta"] = maps.Clone(meta)
	}
	return params, sessRequest{desc: fmt.Sprintf("MCP %s on server '%s'", method, s.server),
		missing: fmt.Sprintf("MCP server '%s' does not support %s (native MCP tasks)", s.server, method)}
}

// taskRequest sends method with params, bounded by ctx and, when bounded,
// by tool_call_timeout; beforeSend runs mcpflow.BeforeSend first.
func (s *Session) taskRequest(ctx context.Context, req sessRequest, method mcp.MCPMethod, params any, beforeSend, bounded bool) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	opCtx := ctx
	if bounded && s.callTimeout > 0 {
		var cancel context.CancelFunc
		opCtx, cancel = context.WithTimeout(ctx, s.callTimeout)
		defer cancel()
	}
	if err := opCtx.Err(); err != nil {
		return nil, nil, s.classify(ctx, opCtx, req, err)
	}
	if beforeSend {
		if err := mcpflow.BeforeSend(ctx); err != nil {
			return nil, nil, err
		}
	}
	name := req.tool
	if p, ok := params.(map[string]any); ok && req.tool == "" {
		name, _ = p["taskId"].(string)
	}
	raw, rpc, err := s.rawRequest(opCtx, method, name, params)
	if err != nil {
		return nil, nil, s.classify(ctx, opCtx, req, err)
	}
	return raw, rpc, nil
}

// rawRequest sends one request and returns the raw result or the server's
// JSON-RPC error (errors unclassified). In 2026-07-28 it adds the
// per-request _meta and, over HTTP, the Mcp-Method, Mcp-Name (tool or
// task) and Mcp-Param-* headers. An unknown-session answer is a disconnect.
func (s *Session) rawRequest(ctx context.Context, method mcp.MCPMethod, name string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.rawRequestID(ctx, sessRequestID(), method, name, params)
}

// sessRequestID is a new id for a request mcpflow sends itself.
func sessRequestID() mcp.RequestId { return mcp.NewRequestId(sessRequestKey()) }

// sessRequestKey is a new request id's string.
func sessRequestKey() string { return "mcpflow-" + strconv.FormatUint(sessTaskSeq.Add(1), 10) }

// rawRequestID is rawRequest with the request's id.
func (s *Session) rawRequestID(ctx context.Context, id mcp.RequestId, method mcp.MCPMethod, name string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      id,
		Method:  string(method),
		Params:  params,
	}
	if p, ok := params.(mcp.CallToolParams); ok && !s.Modern() {
		// Encoded here, so that the transport splices the bytes in.
		b, err := encodeCallParams(p)
		if err != nil {
			return nil, nil, fmt.Errorf("encode the request: %w", err)
		}
		req.Params = json.RawMessage(b)
	}
	if s.Modern() {
		caps := s.clientCaps
		if r := relayFrom(ctx); r != nil && len(r.ClientCapabilities) > 0 && method == mcp.MethodToolsCall {
			caps = nil // the caller's own, below
		}
		body, err := s.withEnvelope(params, caps, relayFrom(ctx))
		if err != nil {
			return nil, nil, err
		}
		req.Params = body
		if s.proc == nil { // stdio has no headers to carry them
			req.Header = s.modernHeaders(method, name, body)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err // not sent, so nothing to cancel
	}
	resp, err := s.client.GetTransport().SendRequest(ctx, req)
	if err == nil && resp == nil {
		err = fmt.Errorf("no answer to %s", method)
	}
	if err != nil {
		if ctx.Err() != nil {
			s.cancelUpstream(ctx, method, req.ID, params)
		}
		return nil, nil, err
	}
	if resp.Error != nil {
		if sessUnknownSessionAnswer(resp.Error) {
			s.markLost()
			return nil, nil, fmt.Errorf("%w: %s (JSON-RPC error %d)", errSessDisconnected, resp.Error.Message, resp.Error.Code)
		}
		return nil, resp.Error, nil
	}
	return resp.Result, nil, nil
}

// cancelUpstream tells a stdio server that request id was abandoned (its
// caller's ctx ended: a deadline, tool_call_timeout, a cancelled call)
// with notifications/cancelled, as mcp-go's client does for the requests
// it sends: a pipe has no other way to say so, and the server would run
// the request to its end on one of its workers. Over HTTP ending the
// request is the cancellation. Best effort, off the caller's path; not for
// a task-augmented call, which tasks/cancel cancels. A subscriptions/listen
// stream's is written before this returns, so that the server reads it
// before the next stream's request (a probe's, the listener's next).
func (s *Session) cancelUpstream(ctx context.Context, method mcp.MCPMethod, id mcp.RequestId, params any) {
	if p, ok := params.(mcp.CallToolParams); s.proc == nil || ok && p.Task != nil {
		return
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
	}}
	send := func() {
		nctx, cancel := context.WithTimeout(context.Background(), sessCancelNotifyWait)
		defer cancel()
		_ = s.client.GetTransport().SendNotification(nctx, n)
	}
	if method == mcp.MethodSubscriptionsListen {
		send()
		return
	}
	go send()
}

// sessCancelNotifyWait bounds the write of a notifications/cancelled.
const sessCancelNotifyWait = 5 * time.Second

// modernHeaders are a 2026-07-28 HTTP request's Mcp-Method, Mcp-Name
// (tool or task) and, for a tool with x-mcp-header bindings, Mcp-Param-*.
func (s *Session) modernHeaders(method mcp.MCPMethod, name string, body json.RawMessage) http.Header {
	h := http.Header{}
	h.Set(mcp.HeaderMethod, string(method))
	if name != "" || mcp.MethodRequiresNameHeader(method) {
		if v, ok := mcp.EncodeHeaderValue(name); ok {
			h.Set(mcp.HeaderName, v)
		}
	}
	if method == mcp.MethodToolsCall {
		s.toolsMu.Lock()
		tool, known := s.tools[name]
		s.toolsMu.Unlock()
		if known {
			for k, v := range mcp.GenerateParamHeaders(&tool, body) {
				h.Set(k, v)
			}
		}
	}
	return h
}

// withEnvelope encodes params with the 2026-07-28 _meta merged in: the
// request's own keys, overridden by the revision, the capabilities (caps,
// or with nil the relay's caller's) and clientInfo. Without own _meta and
// with caps the session's _meta, encoded once, is used.
func (s *Session) withEnvelope(params any, caps map[string]any, relay *mcpflow.CallRelay) (json.RawMessage, error) {
	var own any // the request's own _meta, nil when none
	switch p := params.(type) {
	case nil:
		params = map[string]any{}
	case mcp.CallToolParams:
		if p.Meta != nil {
			own, p.Meta = p.Meta, nil
		}
		params = p
	case map[string]any:
		if m, ok := p["_meta"]; ok {
			p = maps.Clone(p)
			delete(p, "_meta")
			own, params = m, p
		}
	default:
		return nil, fmt.Errorf("mcpflow cannot send params of type %T", params)
	}
	var body []byte
	var err error
	if p, ok := params.(mcp.CallToolParams); ok {
		body, err = encodeCallParams(p)
	} else {
		body, err = json.Marshal(params)
	}
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	var meta []byte
	if own == nil && caps != nil {
		meta = s.sessionMeta()
	} else if meta = s.relayMeta(own, caps, relay); meta == nil {
		m := map[string]any{}
		if own != nil {
			b, err := json.Marshal(own)
			if err == nil {
				_ = json.Unmarshal(b, &m)
			}
		}
		m[mcp.MetaKeyProtocolVersion] = s.version
		if caps != nil {
			m[mcp.MetaKeyClientCapabilities] = caps
		} else if s.proc != nil {
			m[mcp.MetaKeyClientCapabilities] = withoutRoots(relay.ClientCapabilities)
		} else {
			m[mcp.MetaKeyClientCapabilities] = relay.ClientCapabilities
		}
		m[mcp.MetaKeyClientInfo] = s.info
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode the request's _meta: %w", err)
		}
		meta = b
	}
	out := make([]byte, 0, len(body)+len(meta)+10)
	out = append(out, body[:len(body)-1]...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"_meta":`...)
	out = append(out, meta...)
	return append(out, '}'), nil
}

// withoutRoots returns a caller's capabilities without roots, as a stdio
// server is given them: it runs on this host, where the caller's roots
// would name this host's files (see clientOptions). Every member a server
// decoding with encoding/json would read as roots goes: "Roots", an
// escaped name, a name with a Unicode fold of a letter ("rootſ").
func withoutRoots(caps json.RawMessage) json.RawMessage {
	i := jsonscan.SkipWS(caps, 0)
	if i < len(caps) && caps[i] == '{' && jsonscan.Members(caps, i, func(key []byte, _, _ int) bool {
		return !jsonscan.FoldsTo(key, "roots")
	}) {
		return caps // every name plain, none roots in any case
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return json.RawMessage(`{}`)
	}
	for k := range m {
		if strings.EqualFold(k, "roots") {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// sessionMeta is the session's 2026-07-28 _meta, encoded once.
func (s *Session) sessionMeta() []byte {
	s.envOnce.Do(func() {
		s.envMeta, _ = json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    s.version,
			mcp.MetaKeyClientCapabilities: s.clientCaps,
			mcp.MetaKeyClientInfo:         s.info,
		})
		info, _ := json.Marshal(s.info)
		version, _ := json.Marshal(s.version)
		s.envTail = fmt.Appendf(nil, `,%q:%s,%q:%s}`, mcp.MetaKeyClientInfo, info, mcp.MetaKeyProtocolVersion, version)
	})
	return s.envMeta
}

// relayMeta is the _meta of a relayed call with no _meta of its own (the
// common case): the caller's capabilities spliced before the session's
// clientInfo and protocolVersion, encoded once. The bytes are those
// json.Marshal writes for the map (keys sorted, compact, HTML escaped);
// nil, for the map's encoding, when there is own _meta, when caps are the
// session's, or when the capabilities are not JSON (an empty value too) or
// hold what json.Marshal escapes.
func (s *Session) relayMeta(own any, caps map[string]any, relay *mcpflow.CallRelay) []byte {
	if own != nil || caps != nil || relay == nil {
		return nil
	}
	rc := relay.ClientCapabilities
	if s.proc != nil {
		rc = withoutRoots(rc)
	}
	s.sessionMeta()
	out := make([]byte, 0, len(rc)+len(s.envTail)+48)
	out = append(out, `{"`+mcp.MetaKeyClientCapabilities+`":`...)
	if rc == nil {
		out = append(out, "null"...)
	} else {
		buf := bytes.NewBuffer(out)
		if json.Compact(buf, rc) != nil || bytes.ContainsAny(buf.Bytes()[len(out):], "<>&\u2028\u2029") {
			return nil
		}
		out = buf.Bytes()
	}
	return append(out, s.envTail...)
}
