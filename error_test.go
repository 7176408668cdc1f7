package mcpflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestErrorCodeAndMessage(t *testing.T) {
	t.Parallel()

	secret := errors.New("dial tcp 10.0.0.7:5432: password authentication failed")
	notFound := mcpflow.Errorf(mcpflow.ENotFound, "task %s not found", "mcp-task-1")
	protocol := mcpflow.NewProtocolError("MCP task result is not valid JSON: %s", "NaN")
	dup := &mcpflow.DuplicateRemoteTaskError{ServerName: "reports", RemoteTaskID: "remote-secret-42"}

	tests := []struct {
		name        string
		err         error
		wantCode    string
		wantMessage string
	}{
		{name: "nil", err: nil, wantCode: "", wantMessage: ""},
		{name: "domain error", err: notFound, wantCode: mcpflow.ENotFound, wantMessage: "task mcp-task-1 not found"},
		{name: "wrapped domain error", err: fmt.Errorf("get task: %w", notFound), wantCode: mcpflow.ENotFound, wantMessage: "task mcp-task-1 not found"},
		{name: "doubly wrapped domain error", err: fmt.Errorf("api: %w", fmt.Errorf("get task: %w", notFound)), wantCode: mcpflow.ENotFound, wantMessage: "task mcp-task-1 not found"},
		{name: "joined errors", err: errors.Join(secret, notFound), wantCode: mcpflow.ENotFound, wantMessage: "task mcp-task-1 not found"},
		{
			name:        "domain error with internal cause",
			err:         &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "database unavailable", Err: secret},
			wantCode:    mcpflow.EUnavailable,
			wantMessage: "database unavailable",
		},
		{name: "protocol error", err: protocol, wantCode: mcpflow.EUpstream, wantMessage: "MCP task result is not valid JSON: NaN"},
		{name: "wrapped protocol error", err: fmt.Errorf("poll task: %w", protocol), wantCode: mcpflow.EUpstream, wantMessage: "MCP task result is not valid JSON: NaN"},
		{
			name:        "domain error wrapping a protocol error wins",
			err:         &mcpflow.Error{Code: mcpflow.EConflict, Message: "conflict", Err: protocol},
			wantCode:    mcpflow.EConflict,
			wantMessage: "conflict",
		},
		{name: "duplicate remote task", err: dup, wantCode: mcpflow.EConflict, wantMessage: "Remote MCP task is already tracked for server 'reports' by this user"},
		{name: "wrapped duplicate remote task", err: fmt.Errorf("persist task: %w", dup), wantCode: mcpflow.EConflict, wantMessage: "Remote MCP task is already tracked for server 'reports' by this user"},
		{name: "plain error", err: secret, wantCode: mcpflow.EInternal, wantMessage: "internal error"},
		{name: "context canceled", err: context.Canceled, wantCode: mcpflow.EInternal, wantMessage: "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantCode, mcpflow.ErrorCode(tt.err))
			msg := mcpflow.ErrorMessage(tt.err)
			require.Equal(t, tt.wantMessage, msg)
			require.NotContains(t, msg, "password")
			require.NotContains(t, msg, "remote-secret-42")
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()

	cause := errors.New("disk full")
	tests := []struct {
		name string
		err  *mcpflow.Error
		want string
	}{
		{name: "without cause", err: mcpflow.Errorf(mcpflow.EInvalid, "%s must not be empty", "task_name"), want: "invalid_argument: task_name must not be empty"},
		{name: "with cause", err: &mcpflow.Error{Code: mcpflow.EInternal, Message: "persist task", Err: cause}, want: "internal: persist task: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.EqualError(t, tt.err, tt.want)
		})
	}

	wrapped := &mcpflow.Error{Code: mcpflow.EInternal, Message: "persist task", Err: cause}
	require.ErrorIs(t, wrapped, cause)
	require.Nil(t, mcpflow.Errorf(mcpflow.EInvalid, "x").Unwrap())
}

func TestProtocolAndDuplicateErrorPredicates(t *testing.T) {
	t.Parallel()

	protocol := mcpflow.NewProtocolError("remote_task_id must not be empty")
	dup := &mcpflow.DuplicateRemoteTaskError{ServerName: "s", RemoteTaskID: "r-hidden"}

	tests := []struct {
		name      string
		err       error
		protocol  bool
		duplicate bool
	}{
		{name: "nil", err: nil},
		{name: "plain", err: errors.New("x")},
		{name: "protocol", err: protocol, protocol: true},
		{name: "wrapped protocol", err: fmt.Errorf("submit: %w", protocol), protocol: true},
		{name: "domain error with protocol cause", err: &mcpflow.Error{Code: mcpflow.EUpstream, Message: "m", Err: protocol}, protocol: true},
		{name: "duplicate", err: dup, duplicate: true},
		{name: "wrapped duplicate", err: fmt.Errorf("create: %w", dup), duplicate: true},
		{name: "domain error", err: mcpflow.Errorf(mcpflow.EConflict, "conflict")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.protocol, mcpflow.IsProtocolError(tt.err))
			require.Equal(t, tt.duplicate, mcpflow.IsDuplicateRemoteTask(tt.err))
		})
	}

	require.EqualError(t, protocol, "remote_task_id must not be empty")
	require.NotContains(t, dup.Error(), "r-hidden", "the remote id is never exposed")
}

// TestUnknownTool: the unknown-tool error names the tool as called, cut to
// 200 characters (a name is client text: a REST path echoed whole before).
func TestUnknownTool(t *testing.T) {
	err := mcpflow.UnknownTool("files_read")
	require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))
	require.Equal(t, "unknown tool 'files_read'", mcpflow.ErrorMessage(err))
	long := strings.Repeat("é", 3000)
	require.Equal(t, "unknown tool '"+strings.Repeat("é", 200)+"'", mcpflow.ErrorMessage(mcpflow.UnknownTool(long)))
}
