package demomcp

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// The demo server's prompt and resource, for trying mcpflow's prompts and
// resources (docs/agent-developers.md).
const (
	PromptGreet   = "greet"
	ResourceAbout = "demo://about"
	aboutText     = "The demo MCP server of mcpflow's make dev: tools, one prompt, one resource."
)

func (s *Server) registerPromptsAndResources() {
	s.mcp.AddPrompt(mcp.NewPrompt(PromptGreet,
		mcp.WithPromptDescription("Ask for a greeting of someone."),
		mcp.WithArgument("name", mcp.ArgumentDescription("Who to greet."), mcp.RequiredArgument()),
	), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := req.Params.Arguments["name"]
		if name == "" {
			return nil, fmt.Errorf("argument name is required")
		}
		return mcp.NewGetPromptResult("A greeting", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Say hello to "+name+".")),
		}), nil
	})
	s.mcp.AddResource(mcp.NewResource(ResourceAbout, "about", mcp.WithMIMEType("text/plain"),
		mcp.WithResourceDescription("What this server is.")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: ResourceAbout, MIMEType: "text/plain", Text: aboutText}}, nil
		})
}
