package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// statusByCode maps each domain error code to its HTTP status (DESIGN.md;
// 405 method_not_allowed is New's NoMethod). docs/reference/http-api.md and
// openapi.json list them all.
var statusByCode = map[string]int{
	mcpflow.EInvalid:      http.StatusBadRequest,
	mcpflow.EUnauthorized: http.StatusUnauthorized,
	mcpflow.EForbidden:    http.StatusForbidden,
	mcpflow.ENotFound:     http.StatusNotFound,
	mcpflow.EConflict:     http.StatusConflict,
	mcpflow.EGone:         http.StatusGone,
	mcpflow.ETooLarge:     http.StatusRequestEntityTooLarge,
	mcpflow.ETooMany:      http.StatusTooManyRequests,
	mcpflow.EUpstream:     http.StatusBadGateway,
	mcpflow.EUnavailable:  http.StatusServiceUnavailable,
	mcpflow.ETimeout:      http.StatusGatewayTimeout,
	mcpflow.EInternal:     http.StatusInternalServerError,
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail carries the code and a caller-safe message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// renderError is the one place that turns an error into an HTTP answer.
// Internal errors are logged with their cause and rendered without it.
func (s *Server) renderError(c *gin.Context, err error) {
	code := mcpflow.ErrorCode(err)
	if errors.Is(err, context.DeadlineExceeded) && code == mcpflow.EInternal {
		code = mcpflow.ETimeout
	}
	status, ok := statusByCode[code]
	if !ok {
		code, status = mcpflow.EInternal, http.StatusInternalServerError
	}
	msg := mcpflow.ErrorMessage(err)
	if code == mcpflow.ETimeout && msg == "internal error" {
		msg = "the operation timed out"
	}
	if d := mcpflow.RetryAfterOf(err); (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && d > 0 {
		c.Header("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
	if status == http.StatusTooManyRequests && c.Writer.Header().Get("Retry-After") == "" {
		// A per-user cap whose slots free on their own time (running
		// durable tasks, pinned sessions); caps of calls in flight set 1.
		c.Header("Retry-After", "5")
	}
	if status >= 500 {
		s.log.LogAttrs(c.Request.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(c)), slog.String("route", routeOf(c)),
			slog.String("code", code), slog.String("error", err.Error()))
	}
	s.abort(c, status, code, msg)
}

// abort ends a request with an error answer: the REST shape, or under /mcp
// a JSON-RPC error (id null, data.code the REST code) with the same status,
// so an MCP client shows why the API refused before the MCP server read it.
func (s *Server) abort(c *gin.Context, status int, code, msg string) {
	if !isMCPPath(c.Request.URL.Path) {
		c.AbortWithStatusJSON(status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
		return
	}
	c.AbortWithStatusJSON(status, rpcErrorBody{JSONRPC: "2.0", Error: rpcError{Code: rpcCodeOf(status), Message: msg, Data: rpcErrorData{Code: code}}})
}

// isMCPPath reports whether a request path is the MCP endpoint's.
func isMCPPath(p string) bool {
	return p == "/mcp" || strings.HasPrefix(p, "/mcp/")
}

// rpcErrorBody is a JSON-RPC error response without an id.
type rpcErrorBody struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      *struct{} `json:"id"`
	Error   rpcError  `json:"error"`
}

type rpcError struct {
	Code    int          `json:"code"`
	Message string       `json:"message"`
	Data    rpcErrorData `json:"data"`
}

type rpcErrorData struct {
	Code string `json:"code"`
}

// rpcCodeOf is the JSON-RPC code of a refusal with an HTTP status: the
// request was refused (-32600), one of the user's limits is reached
// (-32002, mcpserver's code for the same), or mcpflow failed (-32603).
func rpcCodeOf(status int) int {
	switch {
	case status == http.StatusTooManyRequests:
		return -32002
	case status >= 500:
		return -32603
	}
	return -32600
}
