package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Prompts and resources of the thread's servers, through the runtime when
// it relays them (mcpflow.SurfaceRuntime): listings in one page, results
// as the servers wrote them, a server's error as it said it.

// surface is the runtime's prompts and resources, nil when it has none.
func (s *Server) surface() mcpflow.SurfaceRuntime {
	sr, _ := s.opts.Tools.(mcpflow.SurfaceRuntime)
	return sr
}

// resourcesCap is the resources capability (prompts': listChanged only):
// subscriptions on 2025-11-25 sessions (2026-07-28 has no
// resources/subscribe), list changes on the GET stream.
type resourcesCap struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// hasSurface reports whether mcpflow relays prompts, resources and
// completions (declared with listChanged).
func (s *Server) hasSurface() bool { return s.surface() != nil }

// surfaced is a handler of the runtime's prompts and resources: -32601
// when the runtime has none, the params' decoding error before the rest.
func surfaced(h func(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError)) handler {
	return func(c *call, ctx context.Context) (any, *rpcError) {
		sr := c.s.surface()
		switch {
		case sr == nil:
			return nil, methodNotFound("Method not found: %s", c.msg.Method)
		case c.msg.paramsErr != nil:
			return nil, c.msg.paramsErr
		}
		return h(c, ctx, sr)
	}
}

// listing answers a list method with the items under key, in one page.
func listing(key string, list func(sr mcpflow.SurfaceRuntime, ctx context.Context, userID, threadID string) ([]json.RawMessage, error)) handler {
	return surfaced(func(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError) {
		if c.msg.Params.Cursor != nil && *c.msg.Params.Cursor != "" {
			return nil, invalidParams("invalid cursor: %s answers in one page", c.msg.Method)
		}
		items, err := list(sr, ctx, c.req.UserID, c.req.ThreadID)
		if err != nil {
			return nil, c.surfaceError(err)
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		res := map[string]any{key: items}
		if c.modern {
			// Per user and thread (private); not cached, as the
			// configuration may change at any time.
			res["ttlMs"], res["cacheScope"] = 0, cacheScopePrivate
		}
		return res, nil
	})
}

// getPrompt answers prompts/get.
func getPrompt(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError) {
	p := c.msg.Params
	switch {
	case p.Name == nil || *p.Name == "":
		return nil, invalidParams("prompts/get needs params.name")
	case !isNull(p.Arguments) && !isJSONObject(p.Arguments):
		return nil, invalidParams("params.arguments must be an object")
	}
	res, err := sr.GetPrompt(ctx, c.req.UserID, c.req.ThreadID, *p.Name, rawParams(map[string]json.RawMessage{
		"arguments": p.Arguments, "inputResponses": p.InputResponses}, p.RequestState))
	if err == nil && !c.modern {
		var r struct {
			ResultType string `json:"resultType"`
		}
		if json.Unmarshal(res, &r) == nil && r.ResultType == string(mcp.ResultTypeInputRequired) {
			// A 2026-07-28 server asks the caller for input, which only a
			// 2026-07-28 client can give it on prompts/get.
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(
				"prompt '%s' asks for input (input_required), which mcpflow relays on prompts/get to %s clients only", truncate(*p.Name, 200), ProtocolVersion2026)}
		}
	}
	return c.surfaceAnswer(res, err)
}

// rawParams are the params given (neither absent nor null), and a
// requestState, to send on as they are.
func rawParams(raw map[string]json.RawMessage, requestState string) map[string]any {
	out := map[string]any{}
	for k, v := range raw {
		if !isNull(v) {
			out[k] = v
		}
	}
	if requestState != "" {
		out["requestState"] = requestState
	}
	return out
}

// complete answers completion/complete.
func complete(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError) {
	p := c.msg.Params
	switch {
	case !isJSONObject(p.Ref) || !isJSONObject(p.Argument):
		return nil, invalidParams("completion/complete needs params.ref and params.argument objects")
	case !isNull(p.Context) && !isJSONObject(p.Context):
		return nil, invalidParams("params.context must be an object")
	}
	return c.surfaceAnswer(sr.Complete(ctx, c.req.UserID, c.req.ThreadID, rawParams(map[string]json.RawMessage{
		"ref": p.Ref, "argument": p.Argument, "context": p.Context}, "")))
}

// readResource answers resources/read.
func readResource(c *call, ctx context.Context, sr mcpflow.SurfaceRuntime) (any, *rpcError) {
	uri, rerr := c.uri()
	if rerr != nil {
		return nil, rerr
	}
	res, err := sr.ReadResource(ctx, c.req.UserID, c.req.ThreadID, uri)
	if err != nil || !c.modern {
		return c.surfaceAnswer(res, err)
	}
	// A cacheable result on 2026-07-28: the server's hints, or mcpflow's
	// own (private, not cached) from a server that gives none.
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil || m == nil {
		return c.surfaceAnswer(res, err)
	}
	if _, ok := m["ttlMs"]; !ok {
		m["ttlMs"] = json.RawMessage(`0`)
	}
	if _, ok := m["cacheScope"]; !ok {
		m["cacheScope"] = json.RawMessage(`"` + cacheScopePrivate + `"`)
	}
	return m, nil
}

// uri is params.uri, which the method needs.
func (c *call) uri() (string, *rpcError) {
	if c.msg.Params.URI == nil || *c.msg.Params.URI == "" {
		return "", invalidParams("%s needs params.uri", c.msg.Method)
	}
	return *c.msg.Params.URI, nil
}

// surfaceAnswer is a runtime's answer as the handler's.
func (c *call) surfaceAnswer(res json.RawMessage, err error) (any, *rpcError) {
	if mcpflow.ErrorCode(err) == mcpflow.ETooMany {
		return c.refuseTooMany(err)
	}
	if err != nil {
		return nil, c.surfaceError(err)
	}
	return res, nil
}

// surfaceError is a server's answered error as it said it, or mcpflow's
// own failure.
func (c *call) surfaceError(err error) *rpcError {
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		e := &rpcError{Code: rpc.Code, Message: rpc.Message}
		if len(rpc.Data) > 0 {
			e.Data = rpc.Data
		}
		return e
	}
	return c.domainError(c.msg.Method, err)
}
