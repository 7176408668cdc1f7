package policy

import (
	"context"

	"github.com/mcpflow/mcpflow"
)

// VirtualServer is a named set of tools an admin publishes at its own MCP
// URL (/mcp/v/{name}): tools of several servers, optionally renamed and
// described anew, so that an agent gets exactly the toolbox it needs. It
// narrows what the endpoint shows; the policies decide on top of it.
type VirtualServer struct {
	Description string
	Tools       []VirtualTool
}

// VirtualTool is one tool of a virtual server.
type VirtualTool struct {
	Tool        string // the tool's name as callers see it on /mcp ("files_read_file")
	Name        string // its name on the virtual server ("" keeps Tool)
	Description string // "" keeps the tool's own
}

// exposed is the name a virtual server gives the tool.
func (t VirtualTool) exposed() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Tool
}

// view is the virtual server of ctx's request (nil: none, every tool); a
// name the configuration does not know is ENotFound.
func (g *Guard) view(ctx context.Context) (*VirtualServer, error) {
	name := mcpflow.ToolViewFrom(ctx)
	if name == "" || g.Views == nil {
		return nil, nil
	}
	views, err := g.Views(ctx)
	if err != nil {
		return nil, err
	}
	if v := views[name]; v != nil {
		return v, nil
	}
	return nil, mcpflow.Errorf(mcpflow.ENotFound, "virtual server '%s' not found", name)
}

// HasView reports whether name is a virtual server of the configuration.
func (g *Guard) HasView(ctx context.Context, name string) (bool, error) {
	_, err := g.view(mcpflow.WithToolView(ctx, name))
	if mcpflow.ErrorCode(err) == mcpflow.ENotFound {
		return false, nil
	}
	return err == nil, err
}

// present renames t as v shows it.
func present(t mcpflow.Tool, vt VirtualTool) mcpflow.Tool {
	t.Name = vt.exposed()
	if vt.Description != "" {
		t.Description = vt.Description
	}
	return t
}

// inView lists tools as v shows them, in v's order.
func inView(v *VirtualServer, tools []mcpflow.Tool) []mcpflow.Tool {
	byName := make(map[string]int, len(tools))
	for i := range tools {
		byName[tools[i].Name] = i
	}
	out := make([]mcpflow.Tool, 0, len(v.Tools))
	for _, vt := range v.Tools {
		if i, ok := byName[vt.Tool]; ok {
			out = append(out, present(tools[i], vt))
		}
	}
	return out
}

// real is the name on /mcp of the tool v calls name ("" for none).
func (v *VirtualServer) real(name string) (VirtualTool, bool) {
	for _, vt := range v.Tools {
		if vt.exposed() == name {
			return vt, true
		}
	}
	return VirtualTool{}, false
}
