package mcpflow_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestNewTaskID(t *testing.T) {
	t.Parallel()

	seen := make(map[string]bool)
	for range 1000 {
		id := mcpflow.NewTaskID()
		require.Regexp(t, `^mcp-task-[0-9a-f]{32}$`, id)
		require.Len(t, id, len(mcpflow.TaskIDPrefix)+32)
		require.True(t, mcpflow.ValidTaskID(id))
		require.NoError(t, mcpflow.ValidateID("thread_id", id), "a task id is also a valid path id")
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
}

func TestValidTaskID(t *testing.T) {
	t.Parallel()

	tests := []struct {
		id   string
		want bool
	}{
		{id: "mcp-task-0123456789abcdef0123456789abcdef", want: true},
		{id: "mcp-task-0123456789ABCDEF0123456789abcdef"},
		{id: "mcp-task-0123456789abcdef0123456789abcde"},
		{id: "mcp-task-0123456789abcdef0123456789abcdef0"},
		{id: "mcp-task-0123456789abcdef0123456789abcdeg"},
		{id: "task-0123456789abcdef0123456789abcdef"},
		{id: "mcp-task-0123456789abcdef0123456789abcdef\n"},
		{id: ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, mcpflow.ValidTaskID(tt.id))
		})
	}
}

func TestValidateID(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{name: "empty", id: ""},
		{name: "dot", id: "."},
		{name: "dot dot", id: ".."},
		{name: "slash", id: "a/b"},
		{name: "leading slash", id: "/etc"},
		{name: "traversal", id: "../x"},
		{name: "backslash", id: `a\b`},
		{name: "NUL", id: "a\x00b"},
		{name: "newline", id: "abc\n"},
		{name: "space", id: "a b"},
		{name: "hidden", id: ".hidden"},
		{name: "65 chars", id: strings.Repeat("a", 65)},
		{name: "non-ASCII letter", id: "usér"},
		{name: "colon", id: "user:1"},
		{name: "64 chars", id: strings.Repeat("a", 64), ok: true},
		{name: "one char", id: "a", ok: true},
		{name: "typical user", id: "user-1", ok: true},
		{name: "typical thread", id: "thread_42", ok: true},
		{name: "email-like", id: "alice@example.com", ok: true},
		{name: "inner dots", id: "a..b", ok: true},
		{name: "trailing dot", id: "v1.", ok: true},
		{name: "uuid", id: "550e8400-e29b-41d4-a716-446655440000", ok: true},
		{name: "upper-case uuid", id: "550E8400-E29B-41D4-A716-446655440000", ok: true},
		{name: "uuid hex", id: "550e8400e29b41d4a716446655440000", ok: true},
		{name: "task id", id: "mcp-task-0123456789abcdef0123456789abcdef", ok: true},
		{name: "leading underscore", id: "_x", ok: true},
		{name: "leading at", id: "@x", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := mcpflow.ValidateID("thread_id", tt.id)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
			require.True(t, strings.HasPrefix(mcpflow.ErrorMessage(err), "thread_id "), "message names the field: %q", mcpflow.ErrorMessage(err))
		})
	}
}

func validSubmitRequest() mcpflow.SubmitRequest {
	return mcpflow.SubmitRequest{
		UserID:     "user-1",
		ThreadID:   "thread-1",
		ServerName: "reports",
		TaskName:   "build_report",
		Arguments:  map[string]any{"quarter": "Q3"},
		DriverData: map[string]string{"submit_tool": "start_report"},
	}
}

func TestSubmitRequestValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		mutate  func(r *mcpflow.SubmitRequest)
		wantMsg string // prefix of the caller-safe message; "" means valid
	}{
		{name: "valid", mutate: func(*mcpflow.SubmitRequest) {}},
		{name: "server name 128 chars", mutate: func(r *mcpflow.SubmitRequest) { r.ServerName = strings.Repeat("s", 128) }},
		{name: "server name 128 multi-byte chars", mutate: func(r *mcpflow.SubmitRequest) { r.ServerName = strings.Repeat("é", 128) }},
		{name: "server name 129 chars", mutate: func(r *mcpflow.SubmitRequest) { r.ServerName = strings.Repeat("s", 129) }, wantMsg: "server_name must not exceed 128 characters"},
		{name: "server name empty", mutate: func(r *mcpflow.SubmitRequest) { r.ServerName = "" }, wantMsg: "server_name must not be empty"},
		{name: "server name blank", mutate: func(r *mcpflow.SubmitRequest) { r.ServerName = " \t\n" }, wantMsg: "server_name must not be empty"},
		{name: "task name 255 chars", mutate: func(r *mcpflow.SubmitRequest) { r.TaskName = strings.Repeat("t", 255) }},
		{name: "task name 255 multi-byte chars", mutate: func(r *mcpflow.SubmitRequest) { r.TaskName = strings.Repeat("日", 255) }},
		{name: "task name 256 chars", mutate: func(r *mcpflow.SubmitRequest) { r.TaskName = strings.Repeat("t", 256) }, wantMsg: "task_name must not exceed 255 characters"},
		{name: "task name empty", mutate: func(r *mcpflow.SubmitRequest) { r.TaskName = "" }, wantMsg: "task_name must not be empty"},
		{name: "task name blank", mutate: func(r *mcpflow.SubmitRequest) { r.TaskName = "   " }, wantMsg: "task_name must not be empty"},
		{name: "user id invalid", mutate: func(r *mcpflow.SubmitRequest) { r.UserID = "../etc" }, wantMsg: "user_id "},
		{name: "user id empty", mutate: func(r *mcpflow.SubmitRequest) { r.UserID = "" }, wantMsg: "user_id "},
		{name: "thread id invalid", mutate: func(r *mcpflow.SubmitRequest) { r.ThreadID = "a/b" }, wantMsg: "thread_id "},
		{name: "local task id valid", mutate: func(r *mcpflow.SubmitRequest) { r.LocalTaskID = mcpflow.NewTaskID() }},
		{name: "local task id invalid", mutate: func(r *mcpflow.SubmitRequest) { r.LocalTaskID = "task-1" }, wantMsg: "local_task_id "},
		{name: "nil maps allowed", mutate: func(r *mcpflow.SubmitRequest) { r.Arguments, r.DriverData = nil, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validSubmitRequest()
			tt.mutate(&r)
			err := r.Validate()
			if tt.wantMsg == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, mcpflow.EInvalid, mcpflow.ErrorCode(err))
			require.True(t, strings.HasPrefix(mcpflow.ErrorMessage(err), tt.wantMsg), "message %q should start with %q", mcpflow.ErrorMessage(err), tt.wantMsg)
			require.False(t, mcpflow.IsProtocolError(err))
		})
	}
}

func TestSubmissionValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		remoteID string
		wantErr  string
	}{
		{name: "typical", remoteID: "remote-1"},
		{name: "255 chars", remoteID: strings.Repeat("r", 255)},
		{name: "255 multi-byte chars", remoteID: strings.Repeat("é", 255)},
		{name: "empty", remoteID: "", wantErr: "remote_task_id must not be empty"},
		{name: "blank", remoteID: " \t ", wantErr: "remote_task_id must not be empty"},
		{name: "256 chars (scenario 3)", remoteID: strings.Repeat("r", 256), wantErr: "MCP task remote_task_id must not exceed 255 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mcpflow.Submission{RemoteTaskID: tt.remoteID, Snapshot: mcpflow.Snapshot{Status: mcpflow.StatusSubmitted}}
			err := s.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			var pe *mcpflow.ProtocolError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.wantErr, pe.Message)
			require.NotContains(t, err.Error(), strings.Repeat("r", 20), "the remote id is never echoed")
		})
	}
}

func TestTaskApplySnapshot(t *testing.T) {
	t.Parallel()

	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	earlier := at.Add(-time.Hour)

	tests := []struct {
		name          string
		completedAt   *time.Time
		snap          mcpflow.Snapshot
		wantCompleted *time.Time
	}{
		{
			name:          "completed sets completed_at",
			snap:          mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: "done", ResultArtifact: map[string]string{"path": "/x"}},
			wantCompleted: &at,
		},
		{
			name: "completed with the upstream's content blocks",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusCompleted, Result: map[string]any{"a": "b"},
				Content: json.RawMessage(`[{"type":"text","text":"b"}]`), ResultStructured: true},
			wantCompleted: &at,
		},
		{
			name:          "failed sets completed_at",
			snap:          mcpflow.Snapshot{Status: mcpflow.StatusFailed, Error: ptr("boom")},
			wantCompleted: &at,
		},
		{
			name:          "cancelled sets completed_at",
			snap:          mcpflow.Snapshot{Status: mcpflow.StatusCancelled},
			wantCompleted: &at,
		},
		{
			name:          "terminal keeps an earlier completed_at",
			completedAt:   &earlier,
			snap:          mcpflow.Snapshot{Status: mcpflow.StatusCompleted},
			wantCompleted: &earlier,
		},
		{
			name: "working leaves completed_at unset",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, PollAfterSeconds: ptr(3.0)},
		},
		{
			name: "input_required stores the payload",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"q": "?"}},
		},
		{
			name: "truncated result",
			snap: mcpflow.Snapshot{Status: mcpflow.StatusWorking, ResultPreview: ptr("prev"), ResultTruncated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := &mcpflow.Task{
				ID:            mcpflow.NewTaskID(),
				Status:        mcpflow.StatusWorking,
				Result:        "stale",
				Error:         ptr("stale error"),
				InputRequired: map[string]any{"stale": true},
				// Blocks of an earlier state never outlive it.
				Content:          json.RawMessage(`[{"type":"text","text":"stale"}]`),
				ResultStructured: true,
				CompletedAt:      tt.completedAt,
			}
			task.ApplySnapshot(tt.snap, at)
			require.Equal(t, tt.snap.Status, task.Status)
			require.Equal(t, tt.snap.Result, task.Result)
			require.Equal(t, tt.snap.ResultPreview, task.ResultPreview)
			require.Equal(t, tt.snap.ResultTruncated, task.ResultTruncated)
			require.Equal(t, tt.snap.ResultArtifact, task.ResultArtifact)
			require.Equal(t, tt.snap.Error, task.Error)
			require.Equal(t, tt.snap.InputRequired, task.InputRequired)
			require.Equal(t, tt.snap.Content, task.Content)
			require.Equal(t, tt.snap.ResultStructured, task.ResultStructured)
			require.Equal(t, tt.wantCompleted, task.CompletedAt)
			back := tt.snap
			back.PollAfterSeconds = nil // a task keeps no poll hint
			require.Equal(t, back, task.Snapshot(), "Snapshot gives back what ApplySnapshot took")
		})
	}
}

// FuzzValidateID: ValidateID accepts exactly what the documented pattern
// matches.
func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a", "-a", "_a", "@a", "a/b", "abc\n", "usér", strings.Repeat("a", 64), strings.Repeat("a", 65), "a..b", "a\x00"} {
		f.Add(s)
	}
	pattern := regexp.MustCompile(`^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,63}$`)
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := mcpflow.ValidateID("user_id", id) == nil, pattern.MatchString(id); got != want {
			t.Fatalf("%q: accepted %v, the pattern says %v", id, got, want)
		}
	})
}
