package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func (b *testBundle) appendEvent(t *testing.T, thread, task string, version int, status mcpflow.Status) int64 {
	t.Helper()
	payload := fmt.Sprintf(`{"task_id":%q,"task_name":"job","status":%q,"result":null,"tracking_degraded":false}`, task, status)
	seq, err := b.db.AppendEvent(context.Background(), &mcpflow.ThreadEvent{UserID: "alice", ThreadID: thread, TaskID: task,
		EventVersion: version, Status: status, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return seq
}

func eventsOf(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	raw, ok := body["events"].([]any)
	require.True(t, ok, "events: %v", body)
	out := make([]map[string]any, len(raw))
	for i, e := range raw {
		out[i] = e.(map[string]any)
	}
	return out
}

func TestThreadEventsInOrderWithCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, _ := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"inbox-1"}`)
	require.Equal(t, 201, status)

	status, body := b.do(t, "GET", "/api/threads/inbox-1/events", aliceToken, "")
	require.Equal(t, 200, status)
	require.Empty(t, eventsOf(t, body))
	require.EqualValues(t, 0, body["next"])

	s1 := b.appendEvent(t, "inbox-1", "task-a", 1, mcpflow.StatusInputRequired)
	s2 := b.appendEvent(t, "inbox-1", "task-b", 1, mcpflow.StatusCompleted)
	s3 := b.appendEvent(t, "inbox-1", "task-a", 2, mcpflow.StatusCompleted)

	status, body = b.do(t, "GET", "/api/threads/inbox-1/events", aliceToken, "")
	require.Equal(t, 200, status)
	evs := eventsOf(t, body)
	require.Len(t, evs, 3)
	for i, want := range []struct {
		seq     int64
		task    string
		version int
		status  string
	}{{s1, "task-a", 1, "input_required"}, {s2, "task-b", 1, "completed"}, {s3, "task-a", 2, "completed"}} {
		require.EqualValues(t, want.seq, evs[i]["seq"])
		require.Equal(t, want.task, evs[i]["task_id"])
		require.EqualValues(t, want.version, evs[i]["event_version"])
		require.Equal(t, want.status, evs[i]["status"])
		require.Equal(t, "job", evs[i]["task_name"], "the event's fields are at the top level")
		require.NotEmpty(t, evs[i]["created_at"])
	}
	require.EqualValues(t, s3, body["next"])

	status, body = b.do(t, "GET", fmt.Sprintf("/api/threads/inbox-1/events?after=%d", s1), aliceToken, "")
	require.Equal(t, 200, status)
	evs = eventsOf(t, body)
	require.Len(t, evs, 2)
	require.EqualValues(t, s2, evs[0]["seq"], "after is exclusive")

	status, body = b.do(t, "GET", fmt.Sprintf("/api/threads/inbox-1/events?after=%d&limit=1", s1), aliceToken, "")
	require.Equal(t, 200, status)
	require.Len(t, eventsOf(t, body), 1)
	require.EqualValues(t, s2, body["next"])

	status, body = b.do(t, "GET", fmt.Sprintf("/api/threads/inbox-1/events?after=%d", s3), aliceToken, "")
	require.Equal(t, 200, status)
	require.Empty(t, eventsOf(t, body))
	require.EqualValues(t, s3, body["next"], "next stays at after when nothing is new")
}

func TestThreadEventsLongPoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, _ := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"inbox-2"}`)
	require.Equal(t, 201, status)
	s1 := b.appendEvent(t, "inbox-2", "task-a", 1, mcpflow.StatusInputRequired)

	type answer struct {
		status int
		body   map[string]any
	}
	got := make(chan answer, 1)
	go func() {
		status, body := b.do(t, "GET", fmt.Sprintf("/api/threads/inbox-2/events?after=%d&wait=30", s1), aliceToken, "")
		got <- answer{status, body}
	}()
	// The poll is waiting: nothing after s1 yet.
	select {
	case a := <-got:
		t.Fatalf("the long poll answered before any new event: %v", a.body)
	case <-time.After(200 * time.Millisecond):
	}
	s2 := b.appendEvent(t, "inbox-2", "task-a", 2, mcpflow.StatusCompleted)
	select {
	case a := <-got:
		require.Equal(t, 200, a.status)
		evs := eventsOf(t, a.body)
		require.Len(t, evs, 1)
		require.EqualValues(t, s2, evs[0]["seq"])
		require.EqualValues(t, s2, a.body["next"])
	case <-time.After(25 * time.Second):
		t.Fatal("the long poll did not answer after an event arrived")
	}

	// A wait that runs out answers with no events.
	status, body := b.do(t, "GET", fmt.Sprintf("/api/threads/inbox-2/events?after=%d&wait=0.2", s2), aliceToken, "")
	require.Equal(t, 200, status)
	require.Empty(t, eventsOf(t, body))
	require.EqualValues(t, s2, body["next"])
}

func TestThreadEventsErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, _ := b.do(t, "POST", "/api/threads", aliceToken, `{"thread_id":"inbox-3"}`)
	require.Equal(t, 201, status)
	for _, q := range []string{"after=-1", "after=x", "wait=61", "wait=-1", "wait=abc", "wait=NaN", "limit=0", "limit=1001"} {
		status, body := b.do(t, "GET", "/api/threads/inbox-3/events?"+q, aliceToken, "")
		require.Equal(t, 400, status, q)
		require.Equal(t, "invalid_argument", errCode(t, body), q)
	}
	status, body := b.do(t, "GET", "/api/threads/inbox-3/events", bobToken, "")
	require.Equal(t, 404, status, "another user's inbox is not found")
	require.Equal(t, "not_found", errCode(t, body))
	status, _ = b.do(t, "GET", "/api/threads/inbox-3/events", "", "")
	require.Equal(t, 401, status)

	status, _ = b.do(t, "DELETE", "/api/threads/inbox-3", aliceToken, "")
	require.Equal(t, 204, status)
	select {
	case th := <-b.deleted:
		require.Equal(t, "inbox-3", th.ID)
		require.Equal(t, "alice", th.UserID)
	default:
		t.Fatal("deleting a thread did not report it (its pending notifications must dead-letter)")
	}
	status, body = b.do(t, "GET", "/api/threads/inbox-3/events", aliceToken, "")
	require.Equal(t, 410, status)
	require.Equal(t, "gone", errCode(t, body))
}
