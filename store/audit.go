package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow"
)

// Page sizes of ListAudit.
const (
	DefaultAuditListLimit = 100
	MaxAuditListLimit     = 1000
)

// auditDeleteBatch is how many rows one DELETE of DeleteAuditBefore removes
// at most, so that a large retention sweep is many short statements rather
// than one long transaction.
const (
	auditDeleteBatch = 10_000
	auditInsertRows  = 50 // rows per INSERT of InsertAudit (on SQLite, each row binds only the columns that vary)
)

// auditRow is one row of audit_records.
type auditRow struct {
	ID        int64     `gorm:"column:id;primaryKey;autoIncrement"`
	At        time.Time `gorm:"column:at"`
	Kind      string    `gorm:"column:kind"`
	UserID    string    `gorm:"column:user_id"`
	Admin     bool      `gorm:"column:admin"`
	Provider  string    `gorm:"column:provider"`
	Client    string    `gorm:"column:client"`
	Surface   string    `gorm:"column:surface"`
	ThreadID  string    `gorm:"column:thread_id"`
	Server    string    `gorm:"column:server"`
	Tool      string    `gorm:"column:tool"`
	Decision  string    `gorm:"column:decision"`
	Rule      string    `gorm:"column:rule"`
	Outcome   string    `gorm:"column:outcome"`
	LatencyMS float64   `gorm:"column:latency_ms"`
	TaskID    string    `gorm:"column:task_id"`
	RequestID string    `gorm:"column:request_id"`
	TraceID   string    `gorm:"column:trace_id"`
	Detail    string    `gorm:"column:detail"`
	Arguments string    `gorm:"column:arguments"`
}

// TableName implements gorm's Tabler.
func (auditRow) TableName() string { return "audit_records" }

var _ mcpflow.AuditStore = (*DB)(nil)

// auditText is a string column's stored form: valid UTF-8 without NUL
// (PostgreSQL refuses either in text) and at most size characters when size
// is positive, cut at a rune boundary. The audit log keeps a shortened
// value rather than lose the record, or the batch it is in.
func auditText(s string, size int) string {
	if (size <= 0 || len(s) <= size) && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s // as stored: fewer bytes than size means fewer characters
	}
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if size <= 0 {
		return s
	}
	return mcpflow.TruncateChars(s, size)
}

// auditRowOf returns the row that stores r: the columns' sizes are those of
// migrations/*/00011_audit_records.sql. The database assigns the id, so
// r.ID is ignored; a zero r.Time is now.
func (db *DB) auditRowOf(r *mcpflow.AuditRecord) auditRow {
	at := r.Time
	if at.IsZero() {
		at = db.now()
	}
	latency := r.LatencyMS
	if math.IsNaN(latency) || math.IsInf(latency, 0) {
		latency = 0 // SQLite would store NaN as NULL; neither is a duration
	}
	return auditRow{
		At:        dbTime(at),
		Kind:      auditText(r.Kind, 32),
		UserID:    auditText(r.UserID, 255),
		Admin:     r.Admin,
		Provider:  auditText(r.Provider, 255),
		Client:    auditText(r.Client, 255),
		Surface:   auditText(r.Surface, 32),
		ThreadID:  auditText(r.ThreadID, 255),
		Server:    auditText(r.Server, 255),
		Tool:      auditText(r.Tool, 255),
		Decision:  auditText(r.Decision, 16),
		Rule:      auditText(r.Rule, 255),
		Outcome:   auditText(r.Outcome, 32),
		LatencyMS: latency,
		TaskID:    auditText(r.TaskID, 64),
		RequestID: auditText(r.RequestID, 64),
		TraceID:   auditText(r.TraceID, 32),
		Detail:    auditText(r.Detail, 0),
		Arguments: auditText(r.Arguments, 0),
	}
}

func (r *auditRow) record() mcpflow.AuditRecord {
	return mcpflow.AuditRecord{
		ID:        r.ID,
		Time:      r.At.UTC(),
		Kind:      r.Kind,
		UserID:    r.UserID,
		Admin:     r.Admin,
		Provider:  r.Provider,
		Client:    r.Client,
		Surface:   r.Surface,
		ThreadID:  r.ThreadID,
		Server:    r.Server,
		Tool:      r.Tool,
		Decision:  r.Decision,
		Rule:      r.Rule,
		Outcome:   r.Outcome,
		LatencyMS: r.LatencyMS,
		TaskID:    r.TaskID,
		RequestID: r.RequestID,
		TraceID:   r.TraceID,
		Detail:    r.Detail,
		Arguments: r.Arguments,
	}
}

// InsertAudit implements mcpflow.AuditStore: the records in one
// transaction, in INSERTs of up to auditInsertRows rows, with ids in the order given.
// Times are stored in UTC at microsecond precision (a zero time is now).
// A string longer than its column is cut to the column's size in
// characters, invalid UTF-8 becomes U+FFFD and NUL bytes are dropped, so
// one odd value never costs the batch. The records' IDs are ignored and
// left alone; the database assigns them.
func (db *DB) InsertAudit(ctx context.Context, records []mcpflow.AuditRecord) error {
	if len(records) == 0 {
		return nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert %d audit records: %w", len(records), asUnavailable(err))
	}
	defer func() { _ = tx.Rollback() }()
	vals := make([][auditColumnCount]any, 0, auditInsertRows)
	var args []any
	for start := 0; start < len(records); start += auditInsertRows {
		part := records[start:min(start+auditInsertRows, len(records))]
		vals = vals[:0]
		for i := range part {
			r := db.auditRowOf(&part[i])
			vals = append(vals, [auditColumnCount]any{r.At, r.Kind, r.UserID, r.Admin, r.Provider, r.Client, r.Surface, r.ThreadID, r.Server,
				r.Tool, r.Decision, r.Rule, r.Outcome, r.LatencyMS, r.TaskID, r.RequestID, r.TraceID, r.Detail, r.Arguments})
		}
		shape := db.auditShapeOf(vals)
		args = shape.args(vals, args[:0])
		if _, err := tx.ExecContext(ctx, db.auditInsertSQL(shape), args...); err != nil {
			return fmt.Errorf("insert %d audit records: %w", len(records), asUnavailable(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("insert %d audit records: %w", len(records), asUnavailable(err))
	}
	return nil
}

// auditColumnCount is len(auditColumns).
const auditColumnCount = 19

// auditColumns are the columns InsertAudit writes, in its arguments' order.
var auditColumns = []string{"at", "kind", "user_id", "admin", "provider", "client", "surface", "thread_id", "server",
	"tool", "decision", "rule", "outcome", "latency_ms", "task_id", "request_id", "trace_id", "detail", "arguments"}

// isZeroColumn reports whether x is its column's default (”, false, 0).
func isZeroColumn(x any) bool {
	switch v := x.(type) {
	case string:
		return v == ""
	case bool:
		return !v
	case float64:
		return v == 0
	}
	return false
}

// auditShape is the form of one INSERT of InsertAudit (bit j of a mask:
// auditColumns[j]). The audit records of a batch mostly share their
// caller, tool, decision and outcome, and the pure-Go SQLite engine's cost
// is in parsing the statement and binding its parameters (it finds each
// parameter's value by scanning the arguments), so the statement is as
// short as the rows allow: a column that is empty in every row is left to
// its default, and on SQLite a column equal in every row is bound once.
type auditShape struct {
	rows   int
	used   uint32 // columns written
	perRow uint32 // of used: bound once per row (the rest once per statement)
}

// auditShapeOf is the shape that writes vals (at least one row).
func (db *DB) auditShapeOf(vals [][auditColumnCount]any) auditShape {
	s := auditShape{rows: len(vals), used: 1, perRow: 1} // at: no default, and every row has its own
	for j := 1; j < auditColumnCount; j++ {
		bit := uint32(1) << j
		for _, v := range vals {
			if !isZeroColumn(v[j]) {
				s.used |= bit
			}
			if v[j] != vals[0][j] {
				s.perRow |= bit
			}
		}
	}
	if db.backend == BackendPostgres {
		// PostgreSQL types a VALUES list's parameters as text, which an
		// INSERT … SELECT would not convert: every column in each row.
		s.perRow = s.used
	}
	s.perRow &= s.used
	return s
}

// args appends the statement's arguments: the shared columns once, then
// each row's own.
func (s auditShape) args(vals [][auditColumnCount]any, args []any) []any {
	shared := s.used &^ s.perRow
	for j := range auditColumnCount {
		if shared&(1<<j) != 0 {
			args = append(args, vals[0][j])
		}
	}
	for _, v := range vals {
		for j, x := range v {
			if s.perRow&(1<<j) != 0 {
				args = append(args, x)
			}
		}
	}
	return args
}

// auditInsertSQL is the INSERT of shape, written once per shape: plain SQL
// through database/sql (no RETURNING, no reflection). On PostgreSQL it is
// a multi-row VALUES; on SQLite, with columns shared by every row,
// INSERT … SELECT the shared parameters and the columns of a VALUES list
// (SQLite names them column1, column2…), whose rows it inserts in order.
func (db *DB) auditInsertSQL(s auditShape) string {
	if q, ok := db.auditSQL.Load(s); ok {
		return q.(string)
	}
	placeholder := func(p int) string {
		if db.backend == BackendPostgres {
			return "$" + strconv.Itoa(p)
		}
		return "?"
	}
	var shared, perRow, sel []string
	for j, c := range auditColumns {
		switch bit := uint32(1) << j; {
		case s.perRow&bit != 0:
			perRow = append(perRow, c)
		case s.used&bit != 0:
			shared = append(shared, c)
			sel = append(sel, placeholder(len(sel)+1))
		}
	}
	// OR FAIL on SQLite: a statement that fails leaves the rows it wrote,
	// which the transaction's rollback removes anyway, so SQLite keeps no
	// statement journal of the pages the transaction's earlier INSERTs
	// changed (a third of an INSERT's work).
	verb := "INSERT OR FAIL INTO"
	if db.backend == BackendPostgres {
		verb = "INSERT INTO"
	}
	var b strings.Builder
	b.WriteString(verb + " audit_records (" + strings.Join(append(shared, perRow...), ", ") + ") ")
	if len(shared) > 0 {
		for k := range perRow {
			sel = append(sel, "column"+strconv.Itoa(k+1))
		}
		b.WriteString("SELECT " + strings.Join(sel, ", ") + " FROM (")
	}
	b.WriteString("VALUES ")
	p := len(shared)
	for i := range s.rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for k := range perRow {
			if k > 0 {
				b.WriteString(", ")
			}
			p++
			b.WriteString(placeholder(p))
		}
		b.WriteByte(')')
	}
	if len(shared) > 0 {
		b.WriteByte(')')
	}
	q := b.String()
	db.auditSQL.Store(s, q)
	return q
}

// ListAudit implements mcpflow.AuditStore: the records f selects, newest
// (highest id) first, at most f.Limit of them (0 means 100; clamped to
// 1..1000). UserID, Tool, Decision and Kind match exactly when set; Since
// is inclusive and Until exclusive; Before > 0 returns only ids below it,
// so the last id of a page is the cursor of the next.
func (db *DB) ListAudit(ctx context.Context, f mcpflow.AuditFilter) ([]mcpflow.AuditRecord, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultAuditListLimit
	case limit < 1:
		limit = 1
	case limit > MaxAuditListLimit:
		limit = MaxAuditListLimit
	}
	q := db.gorm.WithContext(ctx).Model(&auditRow{})
	for _, c := range []struct{ column, value string }{
		{"user_id", f.UserID}, {"tool", f.Tool}, {"decision", f.Decision}, {"kind", f.Kind},
	} {
		if c.value != "" {
			q = q.Where(c.column+" = ?", c.value)
		}
	}
	if !f.Since.IsZero() {
		q = q.Where("at >= ?", dbTime(f.Since))
	}
	if !f.Until.IsZero() {
		q = q.Where("at < ?", dbTime(f.Until))
	}
	if f.Before > 0 {
		q = q.Where("id < ?", f.Before)
	}
	var rows []auditRow
	if err := q.Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list audit records: %w", asUnavailable(err))
	}
	out := make([]mcpflow.AuditRecord, len(rows))
	for i := range rows {
		out[i] = rows[i].record()
	}
	return out, nil
}

// DeleteAuditBefore implements mcpflow.AuditStore: it deletes the records
// with a time before t, at most 10,000 per statement (each its own
// transaction) until fewer are left, and returns how many it deleted. On
// an error it returns the count deleted before it.
func (db *DB) DeleteAuditBefore(ctx context.Context, t time.Time) (int64, error) {
	return db.deleteAuditBefore(ctx, t, auditDeleteBatch)
}

// deleteAuditBefore is DeleteAuditBefore with batch rows per statement.
func (db *DB) deleteAuditBefore(ctx context.Context, t time.Time, batch int) (int64, error) {
	cutoff := dbTime(t)
	var total int64
	for {
		res := db.gorm.WithContext(ctx).Exec(
			"DELETE FROM audit_records WHERE id IN (SELECT id FROM audit_records WHERE at < ? ORDER BY at LIMIT ?)",
			cutoff, batch)
		if res.Error != nil {
			return total, fmt.Errorf("delete audit records before %s: %w", cutoff.Format(time.RFC3339Nano), asUnavailable(res.Error))
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}
