package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Native MCP Tasks requests of a session (protocol 2025-11-25). They are
// sent as JSON-RPC requests of their own rather than through mcp-go's
// typed calls: mcp-go has none for a task-augmented tools/call, and its
// typed tasks calls keep neither the JSON-RPC code of an error the server
// answered (unknown codes become plain errors, indistinguishable from a
// transport failure) nor the exact bytes of a result (structuredContent
// numbers become float64; one unknown content block fails the whole
// answer). The answer comes back raw, and a JSON-RPC error the server
// answered with comes back as such, never as a Go error: it is an answer,
// not a failure of the session.

// sessTaskSeq numbers the requests a session sends itself. Their ids are
// strings, which never collide with the integer ids of mcp-go's client.
var sessTaskSeq atomic.Uint64

// CallToolTask sends a task-augmented tools/call of the tool name with
// args (params.task = {}, no ttl requested) and meta as its _meta, merged
// over the WithCallMeta keys of ctx like CallTool. A function set with
// mcpflow.WithBeforeSend runs right before the request leaves; when it
// fails nothing is sent. It returns the raw result (a CreateTaskResult
// from a server that follows the protocol) or the JSON-RPC error the
// server answered with. Bounds and errors are those of CallTool.
func (s *Session) CallToolTask(ctx context.Context, name string, args, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	p := callParams(ctx, name, args, meta)
	p.Task = &mcp.TaskParams{}
	return s.taskRequest(ctx, s.toolRequest(name), mcp.MethodToolsCall, p, true, true)
}

// GetTask sends tasks/get for taskID; see TaskResult.
func (s *Session) GetTask(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.taskMethod(ctx, mcp.MethodTasksGet, taskID, meta)
}

// TaskResult sends tasks/result for taskID with meta (nil: none) as its
// _meta, and returns the raw result or the JSON-RPC error the server
// answered with. The request is bounded by the server's tool_call_timeout
// and by ctx (a server blocks tasks/result until the task is terminal).
// Errors are classified like CallTool's: a lost transport is EUpstream
// for which IsDisconnect is true, an expired tool_call_timeout ETimeout;
// when ctx ends the error wraps ctx.Err().
func (s *Session) TaskResult(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.taskMethod(ctx, mcp.MethodTasksResult, taskID, meta)
}

// AwaitTaskResult is TaskResult without the tool_call_timeout bound: a
// request that stays open while the task runs, for the requests the server
// sends on its stream (the questions of an input_required task). ctx bounds
// it.
func (s *Session) AwaitTaskResult(ctx context.Context, taskID string, meta map[string]any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	params, req := s.taskParams(mcp.MethodTasksResult, taskID, meta)
	return s.taskRequest(ctx, req, mcp.MethodTasksResult, params, false, false)
}

// UpdateTask sends tasks/update (2026-07-28, the Tasks extension) with the
// answers to the task's input requests, keyed as the server keyed them;
// see TaskResult.
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

// taskParams are the params {"taskId", "_meta"} of a tasks/* request and
// how its errors are named.
func (s *Session) taskParams(method mcp.MCPMethod, taskID string, meta map[string]any) (map[string]any, sessRequest) {
	params := map[string]any{"taskId": taskID}
	if len(meta) > 0 {
		params["_meta"] = maps.Clone(meta)
	}
	return params, sessRequest{what: fmt.Sprintf("MCP %s on server '%s'", method, s.server),
		notFound: fmt.Sprintf("MCP server '%s' does not support %s (native MCP tasks)", s.server, method)}
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

// rawRequest sends one request as its own JSON-RPC message and returns
// the raw result, or the JSON-RPC error the server answered with. In
// 2026-07-28 the request carries the per-request _meta (the revision,
// mcpflow's capabilities and identity) and the Mcp-Method, Mcp-Name (name:
// the tool of a tools/call, the task of a tasks/* request) and Mcp-Param-*
// headers. An answer saying the server does not know the session is a
// disconnect. Errors are mcp-go's, unclassified.
func (s *Session) rawRequest(ctx context.Context, method mcp.MCPMethod, name string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("mcpflow-" + strconv.FormatUint(sessTaskSeq.Add(1), 10)),
		Method:  string(method),
		Params:  params,
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
		req.Header = http.Header{}
		req.Header.Set(mcp.HeaderMethod, string(method))
		if name != "" || mcp.MethodRequiresNameHeader(method) {
			if v, ok := mcp.EncodeHeaderValue(name); ok {
				req.Header.Set(mcp.HeaderName, v)
			}
		}
		if method == mcp.MethodToolsCall {
			s.toolsMu.Lock()
			tool, known := s.tools[name]
			s.toolsMu.Unlock()
			if known {
				for k, v := range mcp.GenerateParamHeaders(&tool, body) {
					req.Header.Set(k, v)
				}
			}
		}
	}
	resp, err := s.client.GetTransport().SendRequest(ctx, req)
	if err == nil && resp == nil {
		err = fmt.Errorf("no answer to %s", method)
	}
	if err != nil {
		return nil, nil, err
	}
	if resp.Error != nil {
		if sessUnknownSessionAnswer(resp.Error) {
			// Not the request's answer: the server lost the session.
			s.markLost()
			return nil, nil, fmt.Errorf("%w: %s (JSON-RPC error %d)", errSessDisconnected, resp.Error.Message, resp.Error.Code)
		}
		return nil, resp.Error, nil
	}
	return resp.Result, nil, nil
}

// withEnvelope returns params (a tools/call's mcp.CallToolParams, the map
// of another request, or nil) as a JSON object with the 2026-07-28
// per-request _meta merged in: the request's own _meta keys, then the
// revision, the capabilities (caps: the session's, or with nil the relay's
// caller's) and mcpflow's clientInfo, which win. It encodes params once;
// with the session's capabilities and no _meta of the request's own (a
// plain tool call) the _meta is the session's, encoded once per session.
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
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	var meta []byte
	if own == nil && caps != nil {
		meta = s.sessionMeta()
	} else {
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

// sessionMeta returns the 2026-07-28 _meta of a request that has none of
// its own, with the session's capabilities, encoded once.
func (s *Session) sessionMeta() []byte {
	s.envOnce.Do(func() {
		s.envMeta, _ = json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    s.version,
			mcp.MetaKeyClientCapabilities: s.clientCaps,
			mcp.MetaKeyClientInfo:         s.info,
		})
	})
	return s.envMeta
}
