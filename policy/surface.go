package policy

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpflow/mcpflow"
)

// Prompts and resources are governed by server: a prompts/get or
// resources/read spends from the rate limits that name no tool, of the
// server that answers it (a read once the server has it). A caller sees a server's
// prompts and resources when the policies would name the server to them
// (a tool of it that no rule names by its tool name would be visible, as
// for UnavailableServers), so a server-wide deny, or a deny default with
// allows by tool name only, closes them. A virtual server publishes tools
// only: through one, prompts and resources are closed. Closed means none
// listed and each answered as unknown. Each prompts/get and resources/read
// is audited (kind prompt or resource).

var _ mcpflow.SurfaceRuntime = (*Guard)(nil)

// surface is Next's prompts and resources with ctx limited to the servers
// the caller may use, or nil when the request may reach none.
func (g *Guard) surface(ctx context.Context, userID, threadID string) (mcpflow.SurfaceRuntime, context.Context, error) {
	s, ok := g.Next.(mcpflow.SurfaceRuntime)
	if !ok {
		return nil, ctx, nil
	}
	set, v, err := g.scope(ctx)
	switch {
	case err != nil || v != nil:
		return nil, ctx, err
	case set != nil:
		ctx = mcpflow.WithServerFilter(ctx, func(server string) bool {
			return set.Visible(input(ctx, userID, threadID, &mcpflow.Tool{Server: server})).Allowed
		})
	}
	return s, ctx, nil
}

// ListPrompts implements mcpflow.SurfaceRuntime.
func (g *Guard) ListPrompts(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, ctx, err := g.surface(ctx, userID, threadID)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListPrompts(ctx, userID, threadID)
}

// GetPrompt implements mcpflow.SurfaceRuntime.
func (g *Guard) GetPrompt(ctx context.Context, userID, threadID, name string, params map[string]any) (json.RawMessage, error) {
	return g.audited(ctx, mcpflow.AuditPrompt, userID, threadID, name, mcpflow.UnknownPrompt(name),
		func(s mcpflow.SurfaceRuntime, ctx context.Context) (json.RawMessage, error) {
			return s.GetPrompt(ctx, userID, threadID, name, params)
		})
}

// ListResources implements mcpflow.SurfaceRuntime.
func (g *Guard) ListResources(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, ctx, err := g.surface(ctx, userID, threadID)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListResources(ctx, userID, threadID)
}

// ListResourceTemplates implements mcpflow.SurfaceRuntime.
func (g *Guard) ListResourceTemplates(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, ctx, err := g.surface(ctx, userID, threadID)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListResourceTemplates(ctx, userID, threadID)
}

// ReadResource implements mcpflow.SurfaceRuntime.
func (g *Guard) ReadResource(ctx context.Context, userID, threadID, uri string) (json.RawMessage, error) {
	return g.audited(ctx, mcpflow.AuditResource, userID, threadID, uri, mcpflow.UnknownResource(uri),
		func(s mcpflow.SurfaceRuntime, ctx context.Context) (json.RawMessage, error) {
			return s.ReadResource(ctx, userID, threadID, uri)
		})
}

// Complete implements mcpflow.SurfaceRuntime: nothing to complete for a
// caller whose prompts and resources are closed.
func (g *Guard) Complete(ctx context.Context, userID, threadID string, params map[string]any) (json.RawMessage, error) {
	s, ctx, err := g.surface(ctx, userID, threadID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return json.RawMessage(`{"completion":{"values":[]}}`), nil
	}
	return s.Complete(ctx, userID, threadID, params)
}

// audited runs a prompts/get or resources/read (do) when the caller may
// reach Next's prompts and resources (else it answers unknown), and
// records it: what was asked for (the prompt's name, the resource's URI)
// and how it ended; an unknown one (-32602) as refused.
func (g *Guard) audited(ctx context.Context, kind, userID, threadID, what string, unknown error,
	do func(s mcpflow.SurfaceRuntime, ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	start := time.Now()
	s, sctx, err := g.surface(ctx, userID, threadID)
	limited := "" // the rate limit that refused it
	if s != nil && err == nil && g.Limiter != nil {
		set, perr := g.Policies(ctx)
		if perr != nil {
			return nil, perr
		}
		// The limits that name no tool, of the server the runtime picks.
		sctx = mcpflow.WithServerCheck(sctx, func(server string) error {
			name, err := g.limit(ctx, userID, set.Limits(&mcpflow.Tool{Server: server}))
			if err != nil {
				limited = name
			}
			return err
		})
	}
	var res json.RawMessage
	switch {
	case err != nil:
	case s == nil:
		err = unknown
	default:
		res, err = do(s, sctx)
	}
	if g.Audit == nil {
		return res, err
	}
	rec := mcpflow.AuditRecord{Time: start, Kind: kind, UserID: userID, ThreadID: threadID, Tool: mcpflow.TruncateChars(what, 255),
		Outcome: mcpflow.OutcomeOK, LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
	var rpc *mcpflow.RPCError
	switch {
	case limited != "":
		rec.Outcome, rec.Decision, rec.Rule = mcpflow.OutcomeRefused, Deny, limited
	case errors.As(err, &rpc) && rpc.Code == -32602:
		rec.Outcome = mcpflow.OutcomeRefused
	case err != nil:
		rec.Outcome = mcpflow.OutcomeUpstreamError
	}
	g.Audit(ctx, rec)
	return res, err
}

// SubscribeResource implements mcpflow.SurfaceRuntime.
func (g *Guard) SubscribeResource(ctx context.Context, userID, threadID, uri string, updated func()) (func(), error) {
	s, sctx, err := g.surface(ctx, userID, threadID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, mcpflow.UnknownResource(uri)
	}
	return s.SubscribeResource(sctx, userID, threadID, uri, updated)
}

// WatchLists implements mcpflow.SurfaceRuntime: the servers the caller may
// reach only.
func (g *Guard) WatchLists(ctx context.Context, userID, threadID string, changed func(method string)) (func(), error) {
	s, sctx, err := g.surface(ctx, userID, threadID)
	if err != nil || s == nil {
		return func() {}, err
	}
	return s.WatchLists(sctx, userID, threadID, changed)
}
