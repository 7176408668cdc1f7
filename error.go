package mcpflow

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each maps to exactly one HTTP status in api/.
const (
	EInvalid      = "invalid_argument"  // 400
	EUnauthorized = "unauthenticated"   // 401
	EForbidden    = "forbidden"         // 403
	ENotFound     = "not_found"         // 404
	EConflict     = "conflict"          // 409
	EGone         = "gone"              // 410
	ETooLarge     = "payload_too_large" // 413
	ETooMany      = "too_many_requests" // 429
	EUpstream     = "upstream_error"    // 502
	EUnavailable  = "unavailable"       // 503
	ETimeout      = "timeout"           // 504
	EInternal     = "internal"          // 500
)

// Error is a domain error with a code and a message that is safe to show to
// the caller. Internal details belong in the wrapped error, which is logged
// but never rendered.
type Error struct {
	Code    string
	Message string
	Err     error // optional cause, never shown to API callers
	// RetryAfter, for ETooMany, is when the caller may try again (the
	// Retry-After of a REST answer, the retry delay of an MCP error).
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a domain error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first domain error in err's chain, or
// EInternal for any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	code, _ := classify(err)
	return code
}

// ErrorMessage returns the caller-safe message of err: the message of the
// first domain error in its chain, or a generic text for anything else.
func ErrorMessage(err error) string {
	_, msg := classify(err)
	return msg
}

// classify is ErrorCode and ErrorMessage of err. A ProtocolError is
// EUpstream, a DuplicateRemoteTaskError EConflict.
func classify(err error) (code, msg string) {
	if err == nil {
		return "", "" // before the targets of errors.As, which escape: no allocation
	}
	var e *Error
	var pe *ProtocolError
	var de *DuplicateRemoteTaskError
	switch {
	case errors.As(err, &e):
		return e.Code, e.Message
	case errors.As(err, &pe):
		return EUpstream, pe.Message
	case errors.As(err, &de):
		return EConflict, de.Error()
	}
	return EInternal, "internal error"
}

// ProtocolError is a deterministic violation of the task driver contract
// (spec §2.2): it is permanent, the task becomes failed, and it is never
// retried.
type ProtocolError struct {
	Message string
}

// Error implements error.
func (e *ProtocolError) Error() string { return e.Message }

// NewProtocolError returns a ProtocolError with a formatted message.
func NewProtocolError(format string, args ...any) *ProtocolError {
	return &ProtocolError{Message: fmt.Sprintf(format, args...)}
}

// IsProtocolError reports whether err's chain holds a ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// DuplicateRemoteTaskError reports that a remote task handle is already
// tracked for the same user and server (the unique constraint
// uq_mcp_tasks_user_server_remote). It must surface without compensation:
// an existing durable row owns that remote handle.
type DuplicateRemoteTaskError struct {
	ServerName   string
	RemoteTaskID string
}

// Error implements error. It deliberately does not include the remote id,
// which is never exposed by the API.
func (e *DuplicateRemoteTaskError) Error() string {
	return fmt.Sprintf("Remote MCP task is already tracked for server '%s' by this user", e.ServerName)
}

// IsDuplicateRemoteTask reports whether err's chain holds a
// DuplicateRemoteTaskError.
func IsDuplicateRemoteTask(err error) bool {
	var de *DuplicateRemoteTaskError
	return errors.As(err, &de)
}

// RetryAfterOf is the RetryAfter of the first domain error in err's chain
// (0: none).
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
