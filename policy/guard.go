package policy

import (
	"context"
	"encoding/json"

	"github.com/mcpflow/mcpflow"
)

// Guard is the ToolRuntime the API and the MCP endpoint call: Next seen
// through the policies in force, for the caller of each request
// (mcpflow.CallerFrom). Without policies it adds nothing but a lookup of
// them. Durable tasks' polls, cancels and answers do not pass through it:
// a running task stays its owner's to follow, cancel and answer after a
// policy change.
type Guard struct {
	Next mcpflow.ToolRuntime
	// Policies returns the policies of the configuration Next uses (nil:
	// none).
	Policies func(ctx context.Context) (*Set, error)
}

var (
	_ mcpflow.ToolRuntime = (*Guard)(nil)
	_ mcpflow.ToolLookup  = (*Guard)(nil)
)

func input(ctx context.Context, userID, threadID string, t *mcpflow.Tool) Input {
	return Input{Caller: mcpflow.CallerFrom(ctx), UserID: userID, ThreadID: threadID, Tool: t}
}

// ListTools lists the tools of Next the caller may see.
func (g *Guard) ListTools(ctx context.Context, userID, threadID string) ([]mcpflow.Tool, error) {
	set, err := g.Policies(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := g.Next.ListTools(ctx, userID, threadID)
	if err != nil || set == nil {
		return tools, err
	}
	visible := make([]mcpflow.Tool, 0, len(tools)) // Next's slice may be its cache
	for i := range tools {
		if set.Visible(input(ctx, userID, threadID, &tools[i])).Allowed {
			visible = append(visible, tools[i])
		}
	}
	return visible, nil
}

// LookupTool finds a tool the caller may see; nil for one it may not.
func (g *Guard) LookupTool(ctx context.Context, userID, threadID, name string) (*mcpflow.Tool, error) {
	set, err := g.Policies(ctx)
	if err != nil {
		return nil, err
	}
	t, err := g.lookup(ctx, userID, threadID, name)
	if err != nil || t == nil || set == nil || set.Visible(input(ctx, userID, threadID, t)).Allowed {
		return t, err
	}
	return nil, nil
}

func (g *Guard) lookup(ctx context.Context, userID, threadID, name string) (*mcpflow.Tool, error) {
	if l, ok := g.Next.(mcpflow.ToolLookup); ok {
		return l.LookupTool(ctx, userID, threadID, name)
	}
	tools, err := g.Next.ListTools(ctx, userID, threadID)
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i], nil
		}
	}
	return nil, err
}

// CallTool calls a tool the policies allow for the caller with these
// arguments. A tool the caller may not see is answered as unknown (the
// runtime's own words); a call refused because of its arguments is
// EForbidden, naming the rule.
func (g *Guard) CallTool(ctx context.Context, call mcpflow.ToolCall) (*mcpflow.ToolResult, error) {
	set, err := g.Policies(ctx)
	if err != nil {
		return nil, err
	}
	if set == nil {
		return g.Next.CallTool(ctx, call)
	}
	t, err := g.lookup(ctx, call.UserID, call.ThreadID, call.Tool)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return g.Next.CallTool(ctx, call) // unknown: the runtime answers
	}
	in := input(ctx, call.UserID, call.ThreadID, t)
	if set.Visible(in).Hidden {
		return nil, mcpflow.Errorf(mcpflow.ENotFound, "unknown tool '%s'", call.Tool)
	}
	args, err := policyArgs(call)
	if err != nil {
		return nil, err
	}
	if d := set.decideArgs(in, args); !d.Allowed {
		return nil, d.Refusal()
	}
	return g.Next.CallTool(ctx, call)
}

// policyArgs are the call's arguments as CEL reads them (numbers as
// float64).
func policyArgs(call mcpflow.ToolCall) (map[string]any, error) {
	raw := call.RawArguments
	if call.Arguments != nil || len(raw) == 0 {
		if call.Arguments == nil {
			return map[string]any{}, nil
		}
		var err error
		if raw, err = json.Marshal(call.Arguments); err != nil {
			return nil, mcpflow.Errorf(mcpflow.EInvalid, "arguments must be a JSON object")
		}
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, mcpflow.Errorf(mcpflow.EInvalid, "arguments must be a JSON object")
	}
	return args, nil
}

// UnavailableServers is Next's.
func (g *Guard) UnavailableServers(ctx context.Context, userID string) ([]mcpflow.UnavailableServer, error) {
	return g.Next.UnavailableServers(ctx, userID)
}

// RoutingHints is Next's (over the tools the caller was given).
func (g *Guard) RoutingHints(tools []mcpflow.Tool) string { return g.Next.RoutingHints(tools) }

// ResetCache is Next's.
func (g *Guard) ResetCache() { g.Next.ResetCache() }
