package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpflow/mcpflow"
)

// Offers reports whether the server declared prompts and resources in its
// capabilities.
func (s *Session) Offers() (prompts, resources bool) {
	return s.caps.Prompts != nil, s.caps.Resources != nil
}

// OffersCompletions reports whether the server declared completions.
func (s *Session) OffersCompletions() bool { return s.caps.Completions != nil }

// Request sends one request of the MCP surface beyond tools (prompts,
// resources) with params and returns its result as the server wrote it.
// name is what the request names (a prompt's name, a resource's URI; the
// Mcp-Name header of 2026-07-28). An error the server answers is an
// *mcpflow.RPCError with its code, message and data, for the caller to
// hear as the server said it; a lost transport or a timeout is classified
// as for tools.
func (s *Session) Request(ctx context.Context, method mcp.MCPMethod, name string, params any) (json.RawMessage, error) {
	opCtx := ctx
	if s.callTimeout > 0 {
		var cancel context.CancelFunc
		opCtx, cancel = context.WithTimeout(ctx, s.callTimeout)
		defer cancel()
	}
	if err := mcpflow.BeforeSend(ctx); err != nil {
		return nil, err
	}
	raw, rpc, err := s.rawRequest(opCtx, method, name, params)
	if err != nil {
		return nil, s.classify(ctx, opCtx, sessRequest{what: fmt.Sprintf("MCP %s of server '%s'", method, s.server),
			notFound: fmt.Sprintf("MCP server '%s' does not answer %s", s.server, method)}, err)
	}
	if rpc != nil {
		return nil, &mcpflow.RPCError{Code: rpc.Code, Message: rpc.Message, Data: NonEmptyJSON(rpc.Data)}
	}
	return raw, nil
}
