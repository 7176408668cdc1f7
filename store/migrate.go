package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migrate applies the pending migrations of the backend with goose. On
// PostgreSQL a session-level advisory lock, keyed by database and schema,
// makes concurrent migrations from several processes safe.
func (db *DB) migrate(ctx context.Context) error {
	dir := "migrations/" + db.backend
	fsys, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if db.backend == BackendPostgres {
		dialect = goose.DialectPostgres
		id, err := db.migrationLockID(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		locker, err := lock.NewPostgresSessionLocker(
			lock.WithLockID(id),
			lock.WithLockTimeout(1, 300), // retry every second for 5 minutes
		)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	if db.backend == BackendSQLite {
		unlock, err := db.lockSQLiteMigrations(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer unlock()
	}
	provider, err := goose.NewProvider(dialect, db.sql, fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// provider.Close would close db.sql, which the store still owns.
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// migrationLockID derives the advisory lock id from the current database and
// schema: migrations of one schema exclude each other, while separate schemas
// (one per test, or per tenant) migrate in parallel.
func (db *DB) migrationLockID(ctx context.Context) (int64, error) {
	var name string
	if err := db.sql.QueryRowContext(ctx, "SELECT current_database() || '.' || coalesce(current_schema(), '')").Scan(&name); err != nil {
		return 0, fmt.Errorf("read current schema: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("mcpflow goose migrations " + name))
	return int64(h.Sum64() >> 1), nil
}

// lockSQLiteMigrations serializes migrations of one SQLite file across
// processes (serve and worker starting together on a fresh file) with an
// advisory lock on a sidecar file "<db>.migrate.lock". In-memory databases
// need none.
func (db *DB) lockSQLiteMigrations(ctx context.Context) (func(), error) {
	var seq int
	var name, file string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		return nil, fmt.Errorf("find database file: %w", err)
	}
	if file == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(file+".migrate.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open migration lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock migrations: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
