package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestRecordCancelSignal: the API's record that it sent a cancel is on
// the row at once and reads as a pending cancel, touches nothing else
// (not row_version, not cancel_requested_at: a poll that read the row
// before still writes what it found), is kept by every whole-row write
// (the workflow's copy never carries it), keeps its first time, and is
// not written on a task that ended; a task that ended after it reads as
// not cancel-requested unless its workflow took the request.
func TestRecordCancelSignal(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		task := newTask("alice", "thread-1", "remote-1")
		task.Status = mcpflow.StatusWorking
		require.NoError(t, db.CreateTask(testCtx, task))
		before, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.False(t, before.CancelPending())

		first := at(time.Minute)
		ok, err := db.RecordCancelSignal(testCtx, task.ID, first)
		require.NoError(t, err)
		require.True(t, ok)
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.NotNil(t, got.CancelSignalledAt)
		require.Equal(t, normalized(first), *got.CancelSignalledAt)
		require.True(t, got.CancelPending())
		require.Nil(t, got.CancelRequestedAt, "the workflow's column is its own")
		require.Equal(t, before.RowVersion, got.RowVersion)
		require.Equal(t, before.UpdatedAt, got.UpdatedAt)

		ok, err = db.RecordCancelSignal(testCtx, task.ID, at(2*time.Minute))
		require.NoError(t, err)
		require.False(t, ok, "recorded once")

		// A poll's write fenced by the row version it read before the
		// signal: it lands (the signal is not a write of the row).
		msg := "half way"
		before.StatusMessage = &msg
		require.NoError(t, db.UpdateTask(testCtx, before))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, msg, *got.StatusMessage)
		require.Equal(t, normalized(first), *got.CancelSignalledAt, "a whole-row write withdrew the signal")

		// A writer's copy that says otherwise is not written either.
		other := at(5 * time.Minute)
		got.CancelSignalledAt = &other
		got.Status = mcpflow.StatusInputRequired
		require.NoError(t, db.UpdateTask(testCtx, got))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, normalized(first), *got.CancelSignalledAt)
		require.False(t, got.Answerable(), "a task sent a cancel takes no answer")

		// The task completed before its workflow took the request.
		got.Status = mcpflow.StatusCompleted
		require.NoError(t, db.UpdateTask(testCtx, got))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.False(t, got.CancelPending())

		// A task that ended is left alone.
		done := newTask("alice", "thread-1", "remote-2")
		done.Status = mcpflow.StatusCompleted
		require.NoError(t, db.CreateTask(testCtx, done))
		ok, err = db.RecordCancelSignal(testCtx, done.ID, first)
		require.NoError(t, err)
		require.False(t, ok)
		got, err = db.GetTask(testCtx, done.ID)
		require.NoError(t, err)
		require.Nil(t, got.CancelSignalledAt)

		var _ mcpflow.CancelRecorder = db
	})
}
