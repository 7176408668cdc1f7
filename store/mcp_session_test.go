package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func TestMCPSessions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "th", "alice")
		s := &mcpflow.MCPSession{ID: "mcp-session-1", UserID: "alice", ThreadID: "th", ProtocolVersion: "2025-11-25",
			ClientInfo:         json.RawMessage(`{"name":"inspector","version":"1.0"}`),
			ClientCapabilities: json.RawMessage(`{"elicitation":{"form":{}}}`), CreatedAt: at(0)}
		require.NoError(t, db.CreateMCPSession(testCtx, s))
		require.Equal(t, normalized(at(0)), s.LastUsedAt, "last use defaults to creation")
		requireCode(t, mcpflow.EConflict, db.CreateMCPSession(testCtx, s))
		requireCode(t, mcpflow.ENotFound, db.CreateMCPSession(testCtx, &mcpflow.MCPSession{ID: "x", UserID: "alice", ThreadID: "missing", ProtocolVersion: "2025-11-25"}))
		requireCode(t, mcpflow.EInvalid, db.CreateMCPSession(testCtx, &mcpflow.MCPSession{ID: "y", UserID: "alice", ThreadID: "th", ClientInfo: json.RawMessage(`{`)}))

		got, err := db.GetMCPSession(testCtx, "mcp-session-1")
		require.NoError(t, err)
		require.Equal(t, "alice", got.UserID)
		require.Equal(t, "th", got.ThreadID)
		require.Equal(t, "2025-11-25", got.ProtocolVersion)
		require.JSONEq(t, `{"name":"inspector","version":"1.0"}`, string(got.ClientInfo))
		require.JSONEq(t, `{"elicitation":{"form":{}}}`, string(got.ClientCapabilities))
		require.Equal(t, normalized(at(0)), got.CreatedAt)

		// A session without client data stores empty objects.
		require.NoError(t, db.CreateMCPSession(testCtx, &mcpflow.MCPSession{ID: "mcp-session-2", UserID: "alice", ThreadID: "th", ProtocolVersion: "2025-06-18", CreatedAt: at(time.Hour)}))
		got2, err := db.GetMCPSession(testCtx, "mcp-session-2")
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(got2.ClientCapabilities))

		require.NoError(t, db.TouchMCPSession(testCtx, "mcp-session-1", at(2*time.Hour)))
		got, err = db.GetMCPSession(testCtx, "mcp-session-1")
		require.NoError(t, err)
		require.Equal(t, normalized(at(2*time.Hour)), got.LastUsedAt)
		require.NoError(t, db.TouchMCPSession(testCtx, "mcp-session-1", at(time.Hour)), "an earlier use is no error...")
		got, err = db.GetMCPSession(testCtx, "mcp-session-1")
		require.NoError(t, err)
		require.Equal(t, normalized(at(2*time.Hour)), got.LastUsedAt, "...and the last use does not move back")
		requireCode(t, mcpflow.ENotFound, db.TouchMCPSession(testCtx, "nope", at(0)))

		// Idle sessions go: session 2 was last used at +1h, session 1 at +2h.
		n, err := db.DeleteIdleMCPSessions(testCtx, at(90*time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = db.GetMCPSession(testCtx, "mcp-session-2")
		requireCode(t, mcpflow.ENotFound, err)

		require.NoError(t, db.DeleteMCPSession(testCtx, "mcp-session-1"))
		requireCode(t, mcpflow.ENotFound, db.DeleteMCPSession(testCtx, "mcp-session-1"))
		_, err = db.GetMCPSession(testCtx, "mcp-session-1")
		requireCode(t, mcpflow.ENotFound, err)
	})
}

func TestLatestEventSeq(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "a", "alice")
		createThread(t, db, "b", "alice")
		n, err := db.LatestEventSeq(testCtx, mcpflow.ThreadRef{})
		require.NoError(t, err)
		require.Zero(t, n)
		s1, err := db.AppendEvent(testCtx, event("a", "t1", 1, mcpflow.StatusCompleted))
		require.NoError(t, err)
		s2, err := db.AppendEvent(testCtx, event("b", "t2", 1, mcpflow.StatusFailed))
		require.NoError(t, err)
		n, err = db.LatestEventSeq(testCtx, alice("a"))
		require.NoError(t, err)
		require.Equal(t, s1, n)
		n, err = db.LatestEventSeq(testCtx, mcpflow.ThreadRef{})
		require.NoError(t, err)
		require.Equal(t, s2, n)
		n, err = db.LatestEventSeq(testCtx, alice("nobody"))
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = db.LatestEventSeq(testCtx, mcpflow.ThreadRef{UserID: "bob", ThreadID: "a"})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// EvictMCPSessions keeps a user's most recently used sessions and removes
// the rest, oldest use first; other users' sessions are untouched.
func TestEvictMCPSessions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "ta", "alice")
		createThread(t, db, "tb", "bob")
		mk := func(id, user, thread string, created, used time.Duration) {
			require.NoError(t, db.CreateMCPSession(testCtx, &mcpflow.MCPSession{ID: id, UserID: user, ThreadID: thread,
				ProtocolVersion: "2025-11-25", CreatedAt: at(created), LastUsedAt: at(used)}))
		}
		mk("a-old-used-late", "alice", "ta", 0, 5*time.Hour)
		mk("a-new-idle", "alice", "ta", time.Hour, time.Hour)
		mk("a-mid", "alice", "ta", 2*time.Hour, 3*time.Hour)
		mk("a-newest", "alice", "ta", 4*time.Hour, 4*time.Hour)
		mk("b-1", "bob", "tb", 0, 0)

		removed, err := db.EvictMCPSessions(testCtx, "alice", 4)
		require.NoError(t, err)
		require.Empty(t, removed, "nothing beyond the cap")

		removed, err = db.EvictMCPSessions(testCtx, "alice", 2)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"a-new-idle", "a-mid"}, removed, "the least recently used go, whenever they were created")
		for _, id := range []string{"a-old-used-late", "a-newest", "b-1"} {
			_, err := db.GetMCPSession(testCtx, id)
			require.NoError(t, err, id)
		}
		for _, id := range removed {
			_, err := db.GetMCPSession(testCtx, id)
			requireCode(t, mcpflow.ENotFound, err)
		}

		// Equal last uses: the newer session stays.
		mk("a-tie", "alice", "ta", 6*time.Hour, 5*time.Hour)
		removed, err = db.EvictMCPSessions(testCtx, "alice", 2)
		require.NoError(t, err)
		require.Equal(t, []string{"a-newest"}, removed)

		removed, err = db.EvictMCPSessions(testCtx, "alice", 0)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"a-tie", "a-old-used-late"}, removed)
		_, err = db.GetMCPSession(testCtx, "b-1")
		require.NoError(t, err, "bob keeps his")
		_, err = db.EvictMCPSessions(testCtx, "alice", -1)
		requireCode(t, mcpflow.EInvalid, err)
	})
}

// More sessions than one batch of EvictMCPSessions are all evicted.
func TestEvictManyMCPSessions(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "ta", "alice")
		for i := range evictBatch + 7 {
			require.NoError(t, db.CreateMCPSession(testCtx, &mcpflow.MCPSession{ID: fmt.Sprintf("s-%04d", i), UserID: "alice", ThreadID: "ta",
				ProtocolVersion: "2025-11-25", CreatedAt: at(time.Duration(i) * time.Second)}))
		}
		removed, err := db.EvictMCPSessions(testCtx, "alice", 3)
		require.NoError(t, err)
		require.Len(t, removed, evictBatch+4)
		left, err := db.EvictMCPSessions(testCtx, "alice", 0)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{fmt.Sprintf("s-%04d", evictBatch+6), fmt.Sprintf("s-%04d", evictBatch+5), fmt.Sprintf("s-%04d", evictBatch+4)}, left)
	})
}
