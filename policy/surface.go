package policy

import (
	"context"
	"encoding/json"

	"github.com/mcpflow/mcpflow"
)

// Prompts and resources pass through the Guard as Next relays them while
// no policy is in force and the request is not to a virtual server. Rules
// decide over tools only so far: with policies in force (or through a
// virtual server, which publishes tools) prompts and resources are closed,
// listed as none and answered as unknown, never passed on undecided.

var _ mcpflow.SurfaceRuntime = (*Guard)(nil)

// surface is Next's prompts and resources when the request may reach
// them, else nil.
func (g *Guard) surface(ctx context.Context) (mcpflow.SurfaceRuntime, error) {
	s, ok := g.Next.(mcpflow.SurfaceRuntime)
	if !ok {
		return nil, nil
	}
	set, v, err := g.scope(ctx)
	if err != nil || set != nil || v != nil {
		return nil, err
	}
	return s, nil
}

// ListPrompts implements mcpflow.SurfaceRuntime.
func (g *Guard) ListPrompts(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, err := g.surface(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListPrompts(ctx, userID, threadID)
}

// GetPrompt implements mcpflow.SurfaceRuntime.
func (g *Guard) GetPrompt(ctx context.Context, userID, threadID, name string, params map[string]any) (json.RawMessage, error) {
	s, err := g.surface(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, mcpflow.UnknownPrompt(name)
	}
	return s.GetPrompt(ctx, userID, threadID, name, params)
}

// ListResources implements mcpflow.SurfaceRuntime.
func (g *Guard) ListResources(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, err := g.surface(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListResources(ctx, userID, threadID)
}

// ListResourceTemplates implements mcpflow.SurfaceRuntime.
func (g *Guard) ListResourceTemplates(ctx context.Context, userID, threadID string) ([]json.RawMessage, error) {
	s, err := g.surface(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	return s.ListResourceTemplates(ctx, userID, threadID)
}

// ReadResource implements mcpflow.SurfaceRuntime.
func (g *Guard) ReadResource(ctx context.Context, userID, threadID, uri string) (json.RawMessage, error) {
	s, err := g.surface(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, mcpflow.UnknownResource(uri)
	}
	return s.ReadResource(ctx, userID, threadID, uri)
}

// Complete implements mcpflow.SurfaceRuntime: nothing to complete for a
// caller whose prompts and resources are closed.
func (g *Guard) Complete(ctx context.Context, userID, threadID string, params map[string]any) (json.RawMessage, error) {
	s, err := g.surface(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return json.RawMessage(`{"completion":{"values":[]}}`), nil
	}
	return s.Complete(ctx, userID, threadID, params)
}
