package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestThreads(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		// Create.
		th, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "alice", CreatedAt: at(0)})
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, &mcpflow.Thread{ID: "thread-1", UserID: "alice", CreatedAt: normalized(at(0))}, th)

		got, err := db.GetThread(testCtx, "thread-1")
		require.NoError(t, err)
		require.Equal(t, th, got)

		// The same owner again gets the existing thread.
		again, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "alice", CreatedAt: at(time.Hour)})
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, th, again)

		// Another user's id is not found, never revealed.
		_, _, err = db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "bob"})
		requireCode(t, mcpflow.ENotFound, err)

		// Invalid ids are rejected before the database.
		_, _, err = db.CreateThread(testCtx, &mcpflow.Thread{ID: "../etc", UserID: "alice"})
		requireCode(t, mcpflow.EInvalid, err)
		_, _, err = db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-2", UserID: ""})
		requireCode(t, mcpflow.EInvalid, err)

		// A default creation time is now.
		before := time.Now().UTC().Add(-time.Second)
		th2, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-2", UserID: "alice"})
		require.NoError(t, err)
		require.True(t, created)
		require.True(t, th2.CreatedAt.After(before))

		// Missing.
		_, err = db.GetThread(testCtx, "nope")
		requireCode(t, mcpflow.ENotFound, err)
		requireCode(t, mcpflow.ENotFound, db.DeleteThread(testCtx, "nope", at(0)))
	})
}

func TestDeleteThread(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")

		require.NoError(t, db.DeleteThread(testCtx, "thread-1", at(time.Minute)))
		got, err := db.GetThread(testCtx, "thread-1")
		require.NoError(t, err)
		require.True(t, got.Deleted())
		require.Equal(t, normalized(at(time.Minute)), *got.DeletedAt)

		// Deleting twice keeps the first tombstone.
		require.NoError(t, db.DeleteThread(testCtx, "thread-1", at(time.Hour)))
		got, err = db.GetThread(testCtx, "thread-1")
		require.NoError(t, err)
		require.Equal(t, normalized(at(time.Minute)), *got.DeletedAt)

		// A deleted id is gone for its owner and never resurrected...
		_, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "alice"})
		requireCode(t, mcpflow.EGone, err)
		require.False(t, created)
		// ...and still not revealed to anybody else.
		_, _, err = db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "bob"})
		requireCode(t, mcpflow.ENotFound, err)
	})
}
