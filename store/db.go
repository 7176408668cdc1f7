package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/mcpflow/mcpflow"
)

// Backend names accepted by Open.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// DB is an open, migrated database. It implements mcpflow.TaskStore,
// mcpflow.ThreadStore and mcpflow.EventStore, and is safe for concurrent use.
type DB struct {
	gorm *gorm.DB
	sql  *sql.DB
	// auditSQL caches InsertAudit's statements by their shape.
	auditSQL sync.Map
	backend  string
	now      func() time.Time

	appendMu sync.Mutex
	// appendSubs are the SubscribeAppends callbacks, by subscription.
	appendSubs map[*appendSub]struct{}
}

var (
	_ mcpflow.TaskStore   = (*DB)(nil)
	_ mcpflow.ThreadStore = (*DB)(nil)
	_ mcpflow.EventStore  = (*DB)(nil)
)

// Open connects to the database, applies the pending migrations and returns
// the store. backend is "sqlite" or "postgres".
//
// For SQLite, dsn is a file path or a "file:" URI. A plain path becomes
// "file:<path>?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate";
// a URI keeps its parameters and gets whichever of those are missing, ahead
// of its own. For
// PostgreSQL, dsn is a pgx connection string (URL or key=value).
func Open(ctx context.Context, backend, dsn string) (*DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("open store: database dsn must not be empty")
	}

	var dialector gorm.Dialector
	singleConn := false
	switch backend {
	case BackendSQLite:
		d, memory := sqliteDSN(dsn)
		singleConn = memory
		dialector = sqliteDialector{Dialector: sqlite.Dialector{DSN: d}}
	case BackendPostgres:
		dialector = postgres.New(postgres.Config{DSN: dsn})
	default:
		return nil, fmt.Errorf("open store: unknown database backend %q (want %q or %q)", backend, BackendSQLite, BackendPostgres)
	}

	now := func() time.Time { return time.Now().UTC() }
	gdb, err := openGorm(ctx, dialector, backend == BackendSQLite, &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
		NowFunc:                now,
		Logger:                 gormlogger.Discard,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", backend, err)
	}
	if err := registerUnavailable(gdb); err != nil {
		return nil, fmt.Errorf("open %s store: %w", backend, err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", backend, err)
	}
	if singleConn {
		// Every connection to an in-memory database is a database of its own.
		sqlDB.SetMaxOpenConns(1)
	}
	db := &DB{gorm: gdb, sql: sqlDB, backend: backend, now: now}
	if err := db.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open %s store: %w", backend, err)
	}
	if err := db.migrate(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open %s store: %w", backend, err)
	}
	return db, nil
}

// sqliteBusyWait bounds how long Open retries a first SQLite connection
// that meets SQLITE_BUSY; it matches the default busy timeout.
const sqliteBusyWait = 5 * time.Second

// openGorm opens the pool and its first connection. For SQLite it retries
// while that connection fails with SQLITE_BUSY: switching a new file to WAL
// answers SQLITE_BUSY at once, without waiting for the busy timeout, when
// another process is switching it too (serve and worker starting together
// on a fresh file). Once the file is in WAL mode, which persists in the
// file, new connections no longer race.
func openGorm(ctx context.Context, dialector gorm.Dialector, sqliteFile bool, cfg *gorm.Config) (*gorm.DB, error) {
	deadline := time.Now().Add(sqliteBusyWait)
	for {
		attempt := *cfg // gorm.Open fills in the config it is given
		gdb, err := gorm.Open(dialector, &attempt)
		var busy *gosqlite.Error
		if err == nil || !sqliteFile || !errors.As(err, &busy) || busy.Code() != sqliteBusy || time.Now().After(deadline) {
			return gdb, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sqliteBusy is SQLite's primary result code SQLITE_BUSY.
const sqliteBusy = 5

// Backend returns "sqlite" or "postgres".
func (db *DB) Backend() string { return db.backend }

// Ping checks that the database answers (for readiness probes).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.sql.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s store: %w", db.backend, asUnavailable(err))
	}
	return nil
}

// Close closes the connection pool.
func (db *DB) Close() error {
	if err := db.sql.Close(); err != nil {
		return fmt.Errorf("close %s store: %w", db.backend, err)
	}
	return nil
}

// sqliteDefaults are the connection settings every SQLite connection gets
// unless the DSN already sets them: a busy timeout so writers queue instead
// of failing, WAL so readers never block the writer, enforced foreign keys,
// and BEGIN IMMEDIATE so a transaction never has to upgrade a read lock.
//
// The driver runs the pragmas in the order of the DSN, and the busy timeout
// must come first: switching a new file to WAL takes a write lock, and
// without the timeout a process that meets another one's lock fails at once
// with SQLITE_BUSY (serve and worker starting together on a fresh file).
// sqliteDSN therefore puts the missing defaults before the DSN's own query.
var sqliteDefaults = []struct{ key, name, value string }{
	{"_pragma", "busy_timeout", "busy_timeout(5000)"},
	{"_pragma", "journal_mode", "journal_mode(WAL)"},
	{"_pragma", "foreign_keys", "foreign_keys(1)"},
	{"_pragma", "synchronous", "synchronous(NORMAL)"},
	{"_txlock", "", "immediate"},
}

// sqliteDSN turns a path or file: URI into a file: URI carrying the default
// pragmas that are not set yet. It also reports whether the database lives
// in memory.
func sqliteDSN(dsn string) (string, bool) {
	base, query, _ := strings.Cut(dsn, "?")
	if !strings.HasPrefix(base, "file:") {
		// A plain path: escape what a URI would read as syntax.
		base = "file:" + strings.NewReplacer("%", "%25", "#", "%23").Replace(base)
	}
	present := map[string]bool{}
	memory := strings.TrimPrefix(base, "file:") == ":memory:"
	if values, err := url.ParseQuery(query); err == nil {
		for _, p := range values["_pragma"] {
			name := strings.ToLower(strings.TrimSpace(p))
			if i := strings.IndexAny(name, "(= "); i >= 0 {
				name = name[:i]
			}
			present["_pragma:"+name] = true
		}
		if values.Has("_txlock") {
			present["_txlock:"] = true
		}
		if values.Get("mode") == "memory" {
			memory = true
		}
	}
	parts := []string{}
	for _, d := range sqliteDefaults {
		if !present[d.key+":"+d.name] {
			parts = append(parts, d.key+"="+d.value)
		}
	}
	if query != "" {
		parts = append(parts, query)
	}
	return base + "?" + strings.Join(parts, "&"), memory
}

// sqliteDialector is the glebarez dialector with an error translator that
// keeps the driver error in the chain: the plain one returns a bare
// gorm.ErrDuplicatedKey, which loses the constraint's column list that tells
// a duplicate remote task from any other unique violation.
type sqliteDialector struct {
	sqlite.Dialector
}

// Translate maps constraint violations to GORM's errors and wraps the cause.
func (d sqliteDialector) Translate(err error) error {
	translated := d.Dialector.Translate(err)
	if translated != nil && !errors.Is(err, translated) {
		return fmt.Errorf("%w: %w", translated, err)
	}
	return err
}
