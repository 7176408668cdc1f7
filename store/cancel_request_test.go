package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestRecordCancelRequest: a cancel request recorded by the API is on the
// row at once, touches nothing else (not row_version: a poll that read the
// row before still finds it), and stays when a writer's older copy of the
// row, without one, writes the row; a later request keeps the first time;
// a task that ended is not written.
func TestRecordCancelRequest(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		task := newTask("alice", "thread-1", "remote-1")
		task.Status = mcpflow.StatusWorking
		require.NoError(t, db.CreateTask(testCtx, task))
		before, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)

		first := at(time.Minute)
		ok, err := db.RecordCancelRequest(testCtx, task.ID, first)
		require.NoError(t, err)
		require.True(t, ok)
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.NotNil(t, got.CancelRequestedAt)
		require.Equal(t, normalized(first), *got.CancelRequestedAt)
		require.Equal(t, before.RowVersion, got.RowVersion)
		require.Equal(t, before.UpdatedAt, got.UpdatedAt)

		ok, err = db.RecordCancelRequest(testCtx, task.ID, at(2*time.Minute))
		require.NoError(t, err)
		require.False(t, ok, "recorded once")

		// The workflow's copy of the row, from before the request.
		stale := *before
		stale.RowVersion = 0
		msg := "half way"
		stale.StatusMessage = &msg
		require.NoError(t, db.UpdateTask(testCtx, &stale))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, msg, *got.StatusMessage)
		require.NotNil(t, got.CancelRequestedAt, "an older copy withdrew the cancel request")
		require.Equal(t, normalized(first), *got.CancelRequestedAt)

		// The workflow's own request time, later: the first stays.
		later := at(3 * time.Minute)
		got.CancelRequestedAt = &later
		got.Status = mcpflow.StatusCancelled
		require.NoError(t, db.UpdateTask(testCtx, got))
		got, err = db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, normalized(first), *got.CancelRequestedAt)

		// A task that ended is left alone.
		done := newTask("alice", "thread-1", "remote-2")
		done.Status = mcpflow.StatusCompleted
		require.NoError(t, db.CreateTask(testCtx, done))
		ok, err = db.RecordCancelRequest(testCtx, done.ID, first)
		require.NoError(t, err)
		require.False(t, ok)
		got, err = db.GetTask(testCtx, done.ID)
		require.NoError(t, err)
		require.Nil(t, got.CancelRequestedAt)

		var _ mcpflow.CancelRecorder = db
	})
}
