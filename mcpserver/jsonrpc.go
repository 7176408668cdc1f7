package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC error codes beyond mcp-go's (the MCP spec and its SDKs use
// these).
const (
	// codeSessionNotFound answers a request whose Mcp-Session-Id is unknown
	// (with HTTP 404, as the transport says).
	codeSessionNotFound = -32001
	// codeToolFailed answers a task-augmented call whose submit did not
	// create a task: the tool's error text is the message.
	codeToolFailed = -32000
	// codeTooMany answers a request over one of the user's limits (tool
	// calls in flight, waits, GET streams), with HTTP 429 and Retry-After.
	codeTooMany = -32002
	// retryAfterCap is the Retry-After (seconds) of a refusal by a per-user
	// cap on running durable tasks or pinned sessions: they end on their
	// own time, so a quick retry rarely helps.
	retryAfterCap = "5"
	// codeRequestCancelled answers a request that notifications/cancelled
	// ended (the transport needs an answer; clients ignore it).
	codeRequestCancelled = -32800
	// codeAnswerPending refuses an answer to a task's question while
	// another answer to it is being delivered: a conflict that passes.
	// data.retryAfterMs says when to send it again: it is delivered if
	// that delivery failed, and ignored (tasks/update acknowledges) once
	// the question closed.
	codeAnswerPending = -32003
)

// message is one incoming JSON-RPC message: a request (id and method), a
// notification (method only) or a response (id and result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (m *message) isRequest() bool      { return hasID(m.ID) && m.Method != "" }
func (m *message) isNotification() bool { return !hasID(m.ID) && m.Method != "" }

func hasID(id json.RawMessage) bool {
	return len(id) > 0 && !bytes.Equal(bytes.TrimSpace(id), []byte("null"))
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf(format, args...)}
}

func methodNotFound(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) *rpcError {
	return &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(format, args...)}
}

// response is an outgoing JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func newResponse(id json.RawMessage, result any, err *rpcError) response {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if err != nil {
		return response{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: err}
	}
	if result == nil {
		result = struct{}{}
	}
	return response{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: result}
}

// notification is an outgoing JSON-RPC notification.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// writeJSON answers one JSON-RPC message with an HTTP status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(newResponse(nil, nil, internalError("could not encode the answer")))
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeHTTPError answers a request the transport refuses with an HTTP
// status and a JSON-RPC error body (id null, or the request's id).
func writeHTTPError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeJSON(w, status, newResponse(id, nil, &rpcError{Code: code, Message: msg}))
}
