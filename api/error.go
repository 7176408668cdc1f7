package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/mcpflow/mcpflow"
)

// statusByCode maps each domain error code to its HTTP status (DESIGN.md).
// One more code is not a domain error: the router answers a known path
// with another method 405 method_not_allowed (New's NoMethod). README.md's
// error table and openapi.json's Error schema list all of them.
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
	c.AbortWithStatusJSON(status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}
