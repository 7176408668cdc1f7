package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
)

// gormLogger adapts GORM's logger to slog. It logs slow statements and
// unexpected errors at warn level and nothing else. Statements are logged
// with placeholders only (ParamsFilter drops the values), so user data and
// secrets never reach the log.
type gormLogger struct {
	l    *slog.Logger
	slow time.Duration
}

func newGormLogger(l *slog.Logger, slow time.Duration) gormlogger.Interface {
	if l == nil {
		return gormlogger.Discard
	}
	return &gormLogger{l: l, slow: slow}
}

// LogMode implements gormlogger.Interface; the level is fixed at warn.
func (g *gormLogger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return g }

// Info implements gormlogger.Interface; GORM's info messages are dropped.
func (g *gormLogger) Info(context.Context, string, ...any) {}

// Warn implements gormlogger.Interface.
func (g *gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	g.l.WarnContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

// Error implements gormlogger.Interface.
func (g *gormLogger) Error(ctx context.Context, msg string, args ...any) {
	g.l.ErrorContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

// Trace implements gormlogger.Interface.
func (g *gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	switch {
	case err != nil && !expectedError(err):
		q, _ := fc()
		g.l.WarnContext(ctx, "SQL statement failed", "sql", q, "duration", elapsed, "error", err)
	case g.slow > 0 && elapsed > g.slow:
		q, rows := fc()
		g.l.WarnContext(ctx, "slow SQL statement", "sql", q, "duration", elapsed, "rows", rows)
	}
}

// ParamsFilter implements gorm.ParamsFilter: logged statements never carry
// their values.
func (g *gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// expectedError reports errors that the store turns into domain errors, or
// that the caller caused; they are not worth a log line.
func expectedError(err error) bool {
	return errors.Is(err, gorm.ErrRecordNotFound) ||
		errors.Is(err, gorm.ErrDuplicatedKey) ||
		errors.Is(err, gorm.ErrForeignKeyViolated) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}
