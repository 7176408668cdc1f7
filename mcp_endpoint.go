package mcpflow

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// MCPRequest is one HTTP request to the MCP endpoint (/mcp) after the API
// authenticated it and resolved its thread.
type MCPRequest struct {
	UserID   string
	ThreadID string
	// AcquireCall takes one of the user's tool-call slots (the REST API's
	// server.max_concurrent_calls_per_user); ok is false when all are
	// taken. The endpoint calls release when the call ends.
	AcquireCall func() (release func(), ok bool)
	// AcquireWait takes one of the user's wait slots, shared with the REST
	// events long poll (server.max_waits_per_user): a tasks/result or
	// tasks/cancel that waits for a task holds one while it waits.
	// AcquireStream takes one of the user's GET stream slots
	// (server.max_mcp_streams_per_user). Nil means no limit.
	AcquireWait   func() (release func(), ok bool)
	AcquireStream func() (release func(), ok bool)
	// Method is set by the endpoint to the JSON-RPC method of a POST, for
	// the access log.
	Method string
}

// MCPEndpoint serves the MCP protocol (streamable HTTP, POST/GET/DELETE)
// for one request the API has authenticated and bound to a thread.
type MCPEndpoint interface {
	ServeMCP(w http.ResponseWriter, r *http.Request, req *MCPRequest)
}

// MCPSession is a session of an MCP client with the MCP endpoint, created
// by initialize and bound to one user and thread. It lives in the database,
// so that any replica serves it and restarts keep it.
type MCPSession struct {
	ID                 string // "mcp-session-" and 32 hex digits
	UserID             string
	ThreadID           string
	ProtocolVersion    string          // negotiated at initialize
	ClientInfo         json.RawMessage // as the client sent it (name, version, ...)
	ClientCapabilities json.RawMessage // as the client sent them
	LogLevel           string          // asked by logging/setLevel; "" for none
	CreatedAt          time.Time
	LastUsedAt         time.Time
}

// MCPSessionStore persists MCP sessions.
//
// GetMCPSession returns ENotFound for an unknown (or deleted) session.
// TouchMCPSession records a use. DeleteMCPSession removes a session
// (ENotFound when absent). DeleteIdleMCPSessions removes the sessions last
// used before a time and returns how many it removed. EvictMCPSessions
// removes a user's sessions beyond the keep most recently used and returns
// their ids.
type MCPSessionStore interface {
	CreateMCPSession(ctx context.Context, s *MCPSession) error
	GetMCPSession(ctx context.Context, id string) (*MCPSession, error)
	TouchMCPSession(ctx context.Context, id string, at time.Time) error
	DeleteMCPSession(ctx context.Context, id string) error
	DeleteIdleMCPSessions(ctx context.Context, before time.Time) (int64, error)
	EvictMCPSessions(ctx context.Context, userID string, keep int) ([]string, error)
	// SetMCPSessionLogLevel records the level of log messages the session
	// asked for (ENotFound for an unknown session).
	SetMCPSessionLogLevel(ctx context.Context, id, level string) error
}
