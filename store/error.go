package store

import (
	"errors"
	"strings"

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
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == uqRemoteTask
	}
	return errors.Is(err, gorm.ErrDuplicatedKey) && strings.Contains(err.Error(), sqliteRemoteTaskColumns)
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
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == taskPrimaryKey
	}
	return errors.Is(err, gorm.ErrDuplicatedKey) && strings.Contains(err.Error(), sqliteTaskIDColumn)
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
