package mcpserver

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
	"github.com/mcpflow/mcpflow/store"
)

// openTestStore opens a migrated store on an empty database of backend: a
// file for SQLite, a schema of TEST_DATABASE_URL made for the test (and
// dropped after it) for PostgreSQL, skipped when that is unset.
func openTestStore(t *testing.T, backend string) *store.DB {
	t.Helper()
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "s.db")
	if backend == store.BackendPostgres {
		dsn = testenv.PostgresSchema(t, "mcpserver_test_")
	}
	db, err := store.Open(ctx, backend, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// The per-user session cap ends the session least recently used for real:
// a session in use, served by one replica, outlives the user's idle
// sessions when another replica's initialize goes beyond the cap, although
// it is the oldest; and its uses are written at most once a minute, not on
// every request.
func TestSessionEvictionFollowsRealUse(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{store.BackendSQLite, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := openTestStore(t, backend)
			var clockMu sync.Mutex
			now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
			clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
			advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
			// Two replicas of the endpoint on one database.
			a := newLimitEnvOn(t, db, Options{MaxSessionsPerUser: 3, Now: clock}, 10, 10)
			b := newLimitEnvOn(t, db, Options{MaxSessionsPerUser: 3, Now: clock}, 10, 10)
			list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
			status := func(e *limitEnv, as who, sid string) int {
				resp, _ := e.rpcJSON(t, as, sid, list)
				return resp.StatusCode
			}
			stored := func(sid string) time.Time {
				s, err := db.GetMCPSession(context.Background(), sid)
				require.NoError(t, err)
				return s.LastUsedAt
			}

			busy := a.initialize(t, alice)
			advance(time.Minute)
			idle1 := b.initialize(t, who{"u", "th2"})
			advance(time.Minute)
			idle2 := b.initialize(t, who{"u", "th2"})

			// The busy session is used every 10 s for 20 minutes, on
			// replica a only.
			const uses, every = 120, 10 * time.Second
			writes, last := 0, stored(busy)
			for range uses {
				advance(every)
				require.Equal(t, 200, status(a, alice, busy))
				if got := stored(busy); !got.Equal(last) {
					writes, last = writes+1, got
				}
			}
			require.Positive(t, writes)
			require.LessOrEqual(t, writes, int(uses*every/sessionTouchEvery)+1, "at most one write a minute, not one per request")
			require.WithinDuration(t, clock(), stored(busy), sessionTouchEvery+sessionCacheTTL,
				"the stored last use trails the real one by at most a minute and the session cache")

			// Replica b's initialize beyond the cap ends the least recently
			// used session of the user across the database: the first idle
			// one, not the busy one created before it.
			newest := b.initialize(t, alice)
			require.Equal(t, 404, status(b, who{"u", "th2"}, idle1), "the least recently used session ended")
			require.Equal(t, 200, status(b, alice, busy), "the session in use is kept")
			require.Equal(t, 200, status(b, who{"u", "th2"}, idle2))
			require.Equal(t, 200, status(b, alice, newest))
		})
	}
}
