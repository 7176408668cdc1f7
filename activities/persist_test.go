package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/activities"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// A worker killed after the create's insert and before its workflow task
// completed runs the create again on replay; that run must update the row,
// not fail the submit (found by make soak: "duplicate key ... mcp_tasks_pkey").
// SQLite reports the re-insert as a duplicate remote handle, PostgreSQL as
// a duplicate id; both backends run.
func TestPersistCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testPersistCreateIsIdempotent(t, store.BackendSQLite, testenv.SQLiteFile(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testPersistCreateIsIdempotent(t, store.BackendPostgres, testenv.PostgresURL(t))
	})
}

func testPersistCreateIsIdempotent(t *testing.T, backend, dsn string) {
	ctx := context.Background()
	db, err := store.Open(ctx, backend, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	// Unique names: the PostgreSQL database is shared with other tests.
	thread, remote := "th-"+mcpflow.NewTaskID(), "r-"+mcpflow.NewTaskID()
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: thread, UserID: "u", CreatedAt: time.Now()})
	require.NoError(t, err)
	a := &activities.Activities{Tasks: db, Threads: db, Events: db}

	task := mcpflow.Task{ID: mcpflow.NewTaskID(), UserID: "u", ThreadID: thread, ServerName: "s", DriverName: "d",
		RemoteTaskID: remote, TaskName: "job", Status: mcpflow.StatusSubmitted}
	in := activities.PersistInput{Task: task, Create: true, InboxOnly: true}
	_, err = a.Persist(ctx, in)
	require.NoError(t, err)

	in.Task.Status = mcpflow.StatusWorking // shows that the second run wrote the row
	_, err = a.Persist(ctx, in)
	require.NoError(t, err)

	got, err := db.GetTask(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, mcpflow.StatusWorking, got.Status)

	// Another task claiming the same remote handle is still refused.
	other := task
	other.ID = mcpflow.NewTaskID()
	_, err = a.Persist(ctx, activities.PersistInput{Task: other, Create: true, InboxOnly: true})
	require.Error(t, err)
	require.Contains(t, err.Error(), "already tracked")
}
