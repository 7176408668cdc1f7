package store

import (
	"io/fs"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// Migration 9 makes thread ids per user. A database of version 8 keeps
// every thread, task, event and session, the events get their thread's
// user, and afterwards two users may each have a thread of one id. Down
// and up again on both backends.
func TestMigrationThreadsPerUser(t *testing.T) {
	t.Parallel()
	forEachBundle(t, func(t *testing.T, b *testBundle) {
		db := b.db
		fsys, err := fs.Sub(migrationFiles, "migrations/"+b.backend)
		require.NoError(t, err)
		dialect := goose.DialectSQLite3
		if b.backend == BackendPostgres {
			dialect = goose.DialectPostgres
		}
		p, err := goose.NewProvider(dialect, db.sql, fsys, goose.WithDisableGlobalRegistry(true))
		require.NoError(t, err)
		_, err = p.DownTo(testCtx, 8)
		require.NoError(t, err)

		// Version 8 data: thread ids unique across users, events without
		// a user.
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		exec := func(q string, args ...any) {
			t.Helper()
			require.NoError(t, db.gorm.WithContext(testCtx).Exec(q, args...).Error, q)
		}
		exec("INSERT INTO threads (id, user_id, created_at) VALUES (?, ?, ?), (?, ?, ?)", "t-1", "alice", now, "t-2", "bob", now)
		exec("UPDATE threads SET deleted_at = ? WHERE id = ?", now, "t-2")
		task := newTask("alice", "t-1", "remote-1")
		exec(`INSERT INTO mcp_tasks (id, workflow_id, user_id, thread_id, server_name, driver_name, remote_task_id, task_name, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			task.ID, task.ID, "alice", "t-1", "reports", mcpflow.DriverOrdinary, "remote-1", "report", "working", now, now)
		exec("INSERT INTO thread_events (thread_id, task_id, event_version, status, payload, created_at) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)",
			"t-1", task.ID, 1, "working", `{"n":1}`, now, "t-2", "task-b", 1, "completed", `{"n":2}`, now)
		exec(`INSERT INTO mcp_sessions (id, user_id, thread_id, protocol_version, created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?)`,
			"mcp-session-1", "alice", "t-1", "2025-11-25", now, now)

		_, err = p.Up(testCtx)
		require.NoError(t, err)

		th, err := db.GetThread(testCtx, "alice", "t-1")
		require.NoError(t, err)
		require.False(t, th.Deleted())
		th, err = db.GetThread(testCtx, "bob", "t-2")
		require.NoError(t, err)
		require.True(t, th.Deleted())
		got, err := db.GetTask(testCtx, task.ID)
		require.NoError(t, err)
		require.Equal(t, "t-1", got.ThreadID)
		events, err := db.ListEvents(testCtx, mcpflow.ThreadRef{UserID: "alice", ThreadID: "t-1"}, 0, 10)
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, "alice", events[0].UserID, "an event gets its thread's user")
		events, err = db.ListEvents(testCtx, mcpflow.ThreadRef{UserID: "bob", ThreadID: "t-2"}, 0, 10)
		require.NoError(t, err)
		require.Len(t, events, 1)
		s, err := db.GetMCPSession(testCtx, "mcp-session-1")
		require.NoError(t, err)
		require.Equal(t, "t-1", s.ThreadID)

		// Now bob may have a t-1 of his own, with its own inbox; the
		// references are checked by user and thread.
		createThread(t, db, "t-1", "bob")
		_, err = db.AppendEvent(testCtx, &mcpflow.ThreadEvent{UserID: "bob", ThreadID: "t-1", TaskID: "task-c", EventVersion: 1,
			Status: mcpflow.StatusCompleted, Payload: []byte(`{"n":3}`)})
		require.NoError(t, err)
		events, err = db.ListEvents(testCtx, mcpflow.ThreadRef{UserID: "alice", ThreadID: "t-1"}, 0, 10)
		require.NoError(t, err)
		require.Len(t, events, 1, "bob's event is not in alice's inbox")
		err = db.CreateTask(testCtx, newTask("carol", "t-1", "remote-2"))
		require.ErrorIs(t, err, gorm.ErrForeignKeyViolated, "carol has no thread t-1")
		next, err := db.AppendEvent(testCtx, &mcpflow.ThreadEvent{UserID: "alice", ThreadID: "t-1", TaskID: task.ID, EventVersion: 2,
			Status: mcpflow.StatusCompleted, Payload: []byte(`{"n":4}`)})
		require.NoError(t, err)
		require.Greater(t, next, events[0].Seq, "seq keeps counting after the copied events")

		// A worker of an earlier build appends without a user (PostgreSQL,
		// where replicas of two builds share a database): its task's user
		// is taken.
		if b.backend == BackendPostgres {
			exec("INSERT INTO thread_events (thread_id, task_id, event_version, status, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)",
				"t-1", task.ID, 3, "completed", `{"n":5}`, now)
			events, err = db.ListEvents(testCtx, mcpflow.ThreadRef{UserID: "alice", ThreadID: "t-1"}, 0, 10)
			require.NoError(t, err)
			require.Len(t, events, 3)
			require.Equal(t, "alice", events[2].UserID)
		}
	})
}
