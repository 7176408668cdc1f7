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

		got, err := db.GetThread(testCtx, "alice", "thread-1")
		require.NoError(t, err)
		require.Equal(t, th, got)

		// The same owner again gets the existing thread.
		again, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "alice", CreatedAt: at(time.Hour)})
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, th, again)

		// Thread ids are per user: another user's id is free for bob, who
		// gets a thread of his own, and alice's is untouched.
		bobs, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "bob", CreatedAt: at(time.Minute)})
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, &mcpflow.Thread{ID: "thread-1", UserID: "bob", CreatedAt: normalized(at(time.Minute))}, bobs)
		got, err = db.GetThread(testCtx, "alice", "thread-1")
		require.NoError(t, err)
		require.Equal(t, th, got)
		got, err = db.GetThread(testCtx, "bob", "thread-1")
		require.NoError(t, err)
		require.Equal(t, bobs, got)
		_, err = db.GetThread(testCtx, "carol", "thread-1")
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
		_, err = db.GetThread(testCtx, "alice", "nope")
		requireCode(t, mcpflow.ENotFound, err)
		requireCode(t, mcpflow.ENotFound, db.DeleteThread(testCtx, "alice", "nope", at(0)))
		requireCode(t, mcpflow.ENotFound, db.DeleteThread(testCtx, "carol", "thread-1", at(0)))
	})
}

func TestDeleteThread(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")

		createThread(t, db, "thread-1", "bob")
		require.NoError(t, db.DeleteThread(testCtx, "alice", "thread-1", at(time.Minute)))
		got, err := db.GetThread(testCtx, "alice", "thread-1")
		require.NoError(t, err)
		require.True(t, got.Deleted())
		require.Equal(t, normalized(at(time.Minute)), *got.DeletedAt)

		// Deleting twice keeps the first tombstone.
		require.NoError(t, db.DeleteThread(testCtx, "alice", "thread-1", at(time.Hour)))
		got, err = db.GetThread(testCtx, "alice", "thread-1")
		require.NoError(t, err)
		require.Equal(t, normalized(at(time.Minute)), *got.DeletedAt)

		// A deleted id is gone for its owner and never resurrected...
		_, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "alice"})
		requireCode(t, mcpflow.EGone, err)
		require.False(t, created)
		// ...while bob's thread of that id lives on.
		got, err = db.GetThread(testCtx, "bob", "thread-1")
		require.NoError(t, err)
		require.False(t, got.Deleted())
		_, created, err = db.CreateThread(testCtx, &mcpflow.Thread{ID: "thread-1", UserID: "bob"})
		require.NoError(t, err)
		require.False(t, created)
	})
}
