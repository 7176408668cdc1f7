package store

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenMigrations(t *testing.T) {
	t.Parallel()
	forEachBundle(t, func(t *testing.T, b *testBundle) {
		ctx := context.Background()
		require.Equal(t, b.backend, b.db.Backend())
		require.NoError(t, b.db.Ping(ctx))

		v, err := b.db.schemaVersion(ctx)
		require.NoError(t, err)
		files, err := fs.Glob(migrationFiles, "migrations/"+b.backend+"/*.sql")
		require.NoError(t, err)
		require.NotEmpty(t, files)
		require.Equal(t, int64(len(files)), v, "every embedded migration applied")

		// Opening the migrated database again applies nothing and records
		// nothing new.
		again, err := Open(ctx, b.backend, b.dsn)
		require.NoError(t, err)
		defer func() { require.NoError(t, again.Close()) }()
		v, err = again.schemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(len(files)), v, "every embedded migration applied")
		for version := 1; version <= len(files); version++ {
			var applied int64
			require.NoError(t, again.sql.QueryRowContext(ctx,
				"SELECT count(*) FROM goose_db_version WHERE version_id = $1", version).Scan(&applied))
			require.Equal(t, int64(1), applied, "migration %d", version)
		}

		// The schema is usable from both handles.
		createThread(t, b.db, "t-1", "alice")
		th, err := again.GetThread(ctx, "alice", "t-1")
		require.NoError(t, err)
		require.Equal(t, "alice", th.UserID)

		// The named unique constraint and indexes exist.
		for _, name := range []string{
			"ix_mcp_tasks_user_id", "ix_mcp_tasks_thread_id", "ix_mcp_tasks_status",
			"ix_mcp_tasks_notification_status", "ix_mcp_tasks_thread_created",
			"ix_thread_events_thread_seq", "ix_threads_user_id",
			"ix_mcp_tasks_user_thread_created", "ix_mcp_sessions_last_used_at",
			"ix_audit_records_at", "ix_audit_records_user_id", "ix_audit_records_tool_id",
		} {
			require.True(t, indexExists(t, b.db, name), name)
		}
		if b.backend == BackendPostgres {
			var n int
			require.NoError(t, b.db.sql.QueryRowContext(ctx,
				`SELECT count(*) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
				 WHERE n.nspname = current_schema() AND c.conname = 'uq_mcp_tasks_user_server_remote' AND c.contype = 'u'`).Scan(&n))
			require.Equal(t, 1, n)
		}
	})
}

func indexExists(t *testing.T, db *DB, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	if db.Backend() == BackendPostgres {
		q = "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1"
	}
	var n int
	require.NoError(t, db.sql.QueryRowContext(context.Background(), q, name).Scan(&n))
	return n == 1
}

// Several processes may start at once against one fresh database; the
// PostgreSQL session lock makes exactly one of them migrate.
func TestOpenConcurrentMigrationsPostgres(t *testing.T) {
	t.Parallel()
	dsn := newDSN(t, BackendPostgres)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	dbs := make([]*DB, 4)
	for i := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = Open(ctx, BackendPostgres, dsn)
		}()
	}
	wg.Wait()
	for i := range dbs {
		require.NoError(t, errs[i])
		defer func() { require.NoError(t, dbs[i].Close()) }()
	}
	var applied int64
	require.NoError(t, dbs[0].sql.QueryRowContext(ctx,
		"SELECT count(*) FROM goose_db_version WHERE version_id = 1").Scan(&applied))
	require.Equal(t, int64(1), applied)
}

func TestOpenRejectsUnknownBackend(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "mysql", "x")
	require.ErrorContains(t, err, `unknown database backend "mysql"`)
	_, err = Open(context.Background(), BackendSQLite, " ")
	require.ErrorContains(t, err, "dsn must not be empty")
}

func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pragmas := func(t *testing.T, db *DB) map[string]string {
		t.Helper()
		out := map[string]string{}
		// Read them on one connection, inside a transaction, as writers see them.
		conn, err := db.sql.Conn(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, conn.Close()) }()
		for _, p := range []string{"journal_mode", "foreign_keys", "busy_timeout", "synchronous"} {
			var v string
			require.NoError(t, conn.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v))
			out[p] = v
		}
		return out
	}

	t.Run("plain path", func(t *testing.T) {
		t.Parallel()
		b := setup(t, BackendSQLite)
		require.Equal(t, map[string]string{
			"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000", "synchronous": "1",
		}, pragmas(t, b.db))
	})

	t.Run("file URI keeps its own settings", func(t *testing.T) {
		t.Parallel()
		dsn := "file:" + filepath.Join(t.TempDir(), "custom.db") + "?_pragma=busy_timeout(1234)&_pragma=synchronous(FULL)"
		db, err := Open(ctx, BackendSQLite, dsn)
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		require.Equal(t, map[string]string{
			"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "1234", "synchronous": "2",
		}, pragmas(t, db))
	})

	t.Run("in memory", func(t *testing.T) {
		t.Parallel()
		db, err := Open(ctx, BackendSQLite, ":memory:")
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		createThread(t, db, "t-1", "alice")
		_, err = db.GetThread(ctx, "alice", "t-1")
		require.NoError(t, err)
		require.Equal(t, "1", pragmas(t, db)["foreign_keys"])
	})
}

func TestSQLiteDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		memory   bool
	}{
		{
			in:   "mcpflow.db",
			want: "file:mcpflow.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		},
		{
			in:   "/var/lib/mcp#1/100%.db",
			want: "file:/var/lib/mcp%231/100%25.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		},
		{
			in:   "file:app.db?_pragma=journal_mode(DELETE)&_txlock=deferred&cache=private",
			want: "file:app.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=journal_mode(DELETE)&_txlock=deferred&cache=private",
		},
		{
			in:     ":memory:",
			want:   "file::memory:?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
			memory: true,
		},
		{
			in:     "file:x?mode=memory&_pragma=foreign_keys=1",
			want:   "file:x?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate&mode=memory&_pragma=foreign_keys=1",
			memory: true,
		},
	} {
		got, memory := sqliteDSN(tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.memory, memory, tc.in)
	}
}

// schemaVersion returns the highest applied migration version.
func (db *DB) schemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied").Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
