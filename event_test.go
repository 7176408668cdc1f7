package mcpflow_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func strp(s string) *string { return &s }

func TestBuildEventOnlyWhenAttentionOrDegraded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status   mcpflow.Status
		degraded bool
		want     bool
	}{
		{mcpflow.StatusSubmitted, false, false},
		{mcpflow.StatusWorking, false, false},
		{mcpflow.StatusWorking, true, true},
		{mcpflow.StatusInputRequired, false, true},
		{mcpflow.StatusCompleted, false, true},
		{mcpflow.StatusFailed, false, true},
		{mcpflow.StatusCancelled, false, true},
	} {
		_, ok := mcpflow.BuildEvent("t", "job", mcpflow.Snapshot{Status: tt.status}, tt.degraded, strp("boom"))
		require.Equal(t, tt.want, ok, "%s degraded=%v", tt.status, tt.degraded)
	}
}

func TestEventFieldsAndLastPollErrorOnlyWhileDegraded(t *testing.T) {
	t.Parallel()
	s := mcpflow.Snapshot{Status: mcpflow.StatusInputRequired, InputRequired: map[string]any{"question": "Which?"}}
	e, ok := mcpflow.BuildEvent("mcp-task-1", "job", s, false, strp("old error"))
	require.True(t, ok)
	b, err := e.CanonicalJSON()
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	keys := []string{"task_id", "task_name", "status", "result", "result_preview", "result_truncated",
		"result_artifact", "error", "input_required", "tracking_degraded", "last_poll_error"}
	require.Len(t, got, len(keys))
	for _, k := range keys {
		require.Contains(t, got, k)
	}
	require.Nil(t, got["last_poll_error"], "last_poll_error is null unless tracking is degraded")
	require.Equal(t, map[string]any{"question": "Which?"}, got["input_required"])

	d, ok := mcpflow.BuildEvent("mcp-task-1", "job", mcpflow.Snapshot{Status: mcpflow.StatusWorking}, true, strp("network down"))
	require.True(t, ok)
	require.Equal(t, "network down", *d.LastPollError)
	require.True(t, d.TrackingDegraded)
}

func TestEventCanonicalJSON(t *testing.T) {
	t.Parallel()
	e := mcpflow.Event{TaskID: "t", TaskName: "Zürich <job>", Status: mcpflow.StatusCompleted,
		Result: map[string]any{"b": 1, "a": []any{map[string]any{"z": 1.5, "y": "ü"}}}}
	b, err := e.CanonicalJSON()
	require.NoError(t, err)
	s := string(b)
	require.Equal(t, `{"error":null,"input_required":null,"last_poll_error":null,"result":{"a":[{"y":"ü","z":1.5}],"b":1},"result_artifact":null,"result_preview":null,"result_truncated":false,"status":"completed","task_id":"t","task_name":"Zürich <job>","tracking_degraded":false}`, s)
	require.False(t, strings.Contains(s, `\u`), "non-ASCII and HTML characters are kept as they are")
}

func TestEventFingerprint(t *testing.T) {
	t.Parallel()
	a := mcpflow.Event{TaskID: "t", Status: mcpflow.StatusCompleted, Result: map[string]any{"x": 1, "y": 2}}
	b := mcpflow.Event{TaskID: "t", Status: mcpflow.StatusCompleted, Result: map[string]any{"y": 2, "x": 1}}
	fa, err := a.Fingerprint()
	require.NoError(t, err)
	fb, err := b.Fingerprint()
	require.NoError(t, err)
	require.Equal(t, fa, fb, "key order does not matter")
	require.Len(t, fa, 64)
	c := b
	c.Result = map[string]any{"y": 2, "x": 2}
	fc, err := c.Fingerprint()
	require.NoError(t, err)
	require.NotEqual(t, fa, fc)
	d := a
	d.TrackingDegraded = true
	fd, err := d.Fingerprint()
	require.NoError(t, err)
	require.NotEqual(t, fa, fd)
}

func TestThreadEventView(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	v, err := mcpflow.ThreadEventView(&mcpflow.ThreadEvent{Seq: 7, TaskID: "t", EventVersion: 2, Status: mcpflow.StatusFailed,
		Payload: json.RawMessage(`{"task_id":"t","status":"failed","error":"x","result":12345678901234567890}`), CreatedAt: created})
	require.NoError(t, err)
	require.Equal(t, int64(7), v["seq"])
	require.Equal(t, 2, v["event_version"])
	require.Equal(t, "2026-12-02T10:00:00Z", v["created_at"])
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Contains(t, string(b), `"result":12345678901234567890`, "numbers keep their text")
}
