package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// postgresTests counts the PostgreSQL subtests that ran.
var postgresTests atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		fmt.Printf("store: PostgreSQL suite ran against %s (%d tests)\n", describePostgres(url), postgresTests.Load())
	} else {
		fmt.Println("store: PostgreSQL suite SKIPPED: TEST_DATABASE_URL is unset")
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// describePostgres names the server and database of a DSN without its
// credentials.
func describePostgres(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "an unparsable TEST_DATABASE_URL"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// testBundle is what a store test works with.
type testBundle struct {
	db      *DB
	backend string
	dsn     string // opens the same database (SQLite file or PostgreSQL schema) again
}

// forEachBackend runs fn as the subtests "sqlite" (a fresh file) and
// "postgres" (a fresh schema of TEST_DATABASE_URL, skipped when it is
// unset: testenv.PostgresURL), in parallel.
func forEachBackend(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	forEachBundle(t, func(t *testing.T, b *testBundle) { fn(t, b.db) })
}

// forEachBundle is forEachBackend for tests that need the bundle.
func forEachBundle(t *testing.T, fn func(t *testing.T, b *testBundle)) {
	t.Helper()
	for _, backend := range []string{BackendSQLite, BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, backend))
		})
	}
}

// setup opens a migrated store on a fresh database of the backend.
func setup(t *testing.T, backend string) *testBundle {
	t.Helper()
	dsn := newDSN(t, backend)
	db, err := Open(context.Background(), backend, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return &testBundle{db: db, backend: backend, dsn: dsn}
}

// newDSN returns the DSN of an empty database: a file in t.TempDir() for
// SQLite, or a schema created for this test (and dropped after it) for
// PostgreSQL. PostgreSQL tests are skipped when TEST_DATABASE_URL is unset
// (and fail under MCPFLOW_TEST_REQUIRE_ALL=1).
func newDSN(t *testing.T, backend string) string {
	t.Helper()
	if backend == BackendSQLite {
		return filepath.Join(t.TempDir(), "mcpflow.db")
	}
	dsn := testenv.PostgresSchema(t, "store_test_")
	postgresTests.Add(1)
	return dsn
}

// Fixtures.

var testCtx = context.Background()

func createThread(t *testing.T, db *DB, id, user string) *mcpflow.Thread {
	t.Helper()
	th, created, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: id, UserID: user})
	require.NoError(t, err)
	require.True(t, created)
	return th
}

func newTask(user, thread, remote string) *mcpflow.Task {
	return &mcpflow.Task{
		ID:           mcpflow.NewTaskID(),
		UserID:       user,
		ThreadID:     thread,
		ServerName:   "reports",
		DriverName:   mcpflow.DriverOrdinary,
		RemoteTaskID: remote,
		TaskName:     "build_report",
		Status:       mcpflow.StatusSubmitted,
		DriverData:   map[string]string{"submit_tool": "submit_report", "status_tool": "status_report"},
	}
}

func ptr[T any](v T) *T { return &v }

func requireCode(t *testing.T, code string, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, mcpflow.ErrorCode(err), "error: %v", err)
}

// at returns a fixed instant with nanoseconds in a non-UTC zone, to check
// that the store normalizes timestamps.
func at(offset time.Duration) time.Time {
	zone := time.FixedZone("UTC+2", 2*60*60)
	return time.Date(2026, 3, 4, 5, 6, 7, 123456789, zone).Add(offset)
}
