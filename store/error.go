package store

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// uqRemoteTask is the unique constraint on (user_id, server_name,
// remote_task_id) of mcp_tasks.
const uqRemoteTask = "uq_mcp_tasks_user_server_remote"

// sqliteRemoteTaskColumns is how SQLite names that constraint in its error
// message ("UNIQUE constraint failed: <columns>").
const sqliteRemoteTaskColumns = "mcp_tasks.user_id, mcp_tasks.server_name, mcp_tasks.remote_task_id"

// isDuplicateRemoteTask reports whether err violates uqRemoteTask: by
// constraint name on PostgreSQL, by column list on SQLite. Any other unique
// violation (a duplicate local id, say) is not one.
func isDuplicateRemoteTask(err error) bool {
	return isUniqueViolation(err, uqRemoteTask, sqliteRemoteTaskColumns)
}

// taskPrimaryKey is PostgreSQL's name for the primary key of mcp_tasks;
// sqliteTaskIDColumn is how SQLite names it.
const (
	taskPrimaryKey     = "mcp_tasks_pkey"
	sqliteTaskIDColumn = "UNIQUE constraint failed: mcp_tasks.id"
)

// isDuplicateTaskID reports whether err violates the primary key of
// mcp_tasks: a second insert of the same task id.
func isDuplicateTaskID(err error) bool {
	return isUniqueViolation(err, taskPrimaryKey, sqliteTaskIDColumn)
}

// isUniqueViolation reports whether err violates the unique constraint
// PostgreSQL names constraint and SQLite's message names by sqliteText.
func isUniqueViolation(err error, constraint, sqliteText string) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == constraint
	}
	return errors.Is(err, gorm.ErrDuplicatedKey) && strings.Contains(err.Error(), sqliteText)
}

func notFound(format string, args ...any) error {
	return mcpflow.Errorf(mcpflow.ENotFound, format, args...)
}

func gone(format string, args ...any) error {
	return mcpflow.Errorf(mcpflow.EGone, format, args...)
}

func invalid(format string, args ...any) error {
	return mcpflow.Errorf(mcpflow.EInvalid, format, args...)
}

// asUnavailable turns an error that means the database cannot be reached
// right now (a connection refused, dropped or timed out, a server starting
// up or shutting down) into an mcpflow.EUnavailable error, so callers answer
// 503 instead of 500; any other error is returned as it is.
func asUnavailable(err error) error {
	if err == nil || mcpflow.ErrorCode(err) != mcpflow.EInternal || !isUnavailable(err) {
		return err
	}
	return &mcpflow.Error{Code: mcpflow.EUnavailable, Message: "the database is unavailable; retry shortly", Err: err}
}

func isUnavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01..57P03: admin shutdown,
		// crash shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne *net.OpError
	return errors.As(err, &ne) || pgconn.SafeToRetry(err)
}

// registerUnavailable makes every GORM operation report an unreachable
// database as mcpflow.EUnavailable.
func registerUnavailable(gdb *gorm.DB) error {
	mark := func(tx *gorm.DB) {
		if tx.Error != nil {
			tx.Error = asUnavailable(tx.Error)
		}
	}
	cb := gdb.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("mcpflow:unavailable", mark),
		cb.Query().After("gorm:query").Register("mcpflow:unavailable", mark),
		cb.Update().After("gorm:update").Register("mcpflow:unavailable", mark),
		cb.Delete().After("gorm:delete").Register("mcpflow:unavailable", mark),
		cb.Row().After("gorm:row").Register("mcpflow:unavailable", mark),
		cb.Raw().After("gorm:raw").Register("mcpflow:unavailable", mark),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
