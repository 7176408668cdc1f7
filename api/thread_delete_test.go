package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestDeleteThreadCancelsItsRunningTasks: deleting a thread asks each of
// its running durable tasks (every page of them) to cancel, and none of
// its finished tasks or another thread's; when a cancel cannot be asked
// (no worker) the delete answers 503 and the thread stays, so nothing
// is left running out of reach; a task that finished meanwhile (409 from
// the runtime) does not stop the delete.
func TestDeleteThreadCancelsItsRunningTasks(t *testing.T) {
	t.Parallel()
	rec := &cancelRecorder{}
	b := setupTasks(t, rec)
	b.thread(t, "t1", "alice")
	b.thread(t, "t2", "alice")
	want := map[string]bool{}
	statuses := []mcpflow.Status{mcpflow.StatusSubmitted, mcpflow.StatusWorking, mcpflow.StatusInputRequired}
	for i := range 103 { // more than one page of the listing (100)
		want[b.task(t, "alice", "t1", i, statuses[i%3], nil).ID] = true
	}
	done := b.task(t, "alice", "t1", 200, mcpflow.StatusCompleted, nil)
	other := b.task(t, "alice", "t2", 201, mcpflow.StatusWorking, nil)

	rec.fail(mcpflow.Errorf(mcpflow.EUnavailable, "no mcpflow worker is running to perform the cancellation; try again when one is"))
	code, body := b.do(t, http.MethodDelete, "/api/threads/t1", aliceToken, "")
	require.Equal(t, http.StatusServiceUnavailable, code, "%v", body)
	require.Equal(t, map[string]any{"code": "unavailable",
		"message": "no mcpflow worker is running to perform the cancellation; try again when one is"}, body["error"])
	code, body = b.do(t, http.MethodGet, "/api/threads/t1", aliceToken, "")
	require.Equal(t, http.StatusOK, code, "the thread was deleted though its tasks could not be cancelled: %v", body)

	rec.fail(mcpflow.Errorf(mcpflow.EConflict, "the task already finished"))
	before := len(rec.called())
	code, body = b.do(t, http.MethodDelete, "/api/threads/t1", aliceToken, "")
	require.Equal(t, http.StatusNoContent, code, "%v", body)
	got := map[string]bool{}
	for _, id := range rec.called()[before:] {
		got[id] = true
	}
	for id := range want {
		require.True(t, got[id], "running task %s of the deleted thread was not cancelled", id)
	}
	require.False(t, got[done.ID], "a finished task was cancelled")
	require.False(t, got[other.ID], "another thread's task was cancelled")
	code, body = b.do(t, http.MethodGet, "/api/threads/t1", aliceToken, "")
	require.Equal(t, http.StatusGone, code, "%v", body)
}
