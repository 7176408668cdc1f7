package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// List limits of ListTasks.
const (
	DefaultTaskListLimit = 50
	MaxTaskListLimit     = 100
)

// taskRow is one row of mcp_tasks.
type taskRow struct {
	ID                        string     `gorm:"column:id;primaryKey"`
	WorkflowID                string     `gorm:"column:workflow_id"`
	UserID                    string     `gorm:"column:user_id"`
	ThreadID                  string     `gorm:"column:thread_id"`
	RunID                     *string    `gorm:"column:run_id"`
	ToolCallID                *string    `gorm:"column:tool_call_id"`
	ServerName                string     `gorm:"column:server_name"`
	DriverName                string     `gorm:"column:driver_name"`
	RemoteTaskID              string     `gorm:"column:remote_task_id"`
	TaskName                  string     `gorm:"column:task_name"`
	Status                    string     `gorm:"column:status"`
	Result                    *string    `gorm:"column:result"`
	ResultPreview             *string    `gorm:"column:result_preview"`
	ResultTruncated           bool       `gorm:"column:result_truncated"`
	ResultArtifact            *string    `gorm:"column:result_artifact"`
	Content                   *string    `gorm:"column:content"`
	ResultStructured          bool       `gorm:"column:result_structured"`
	Error                     *string    `gorm:"column:error"`
	InputRequired             *string    `gorm:"column:input_required"`
	InputAnswerable           bool       `gorm:"column:input_answerable"`
	StatusMessage             *string    `gorm:"column:status_message"`
	DriverData                string     `gorm:"column:driver_data"`
	NotificationStatus        string     `gorm:"column:notification_status"`
	NotificationError         *string    `gorm:"column:notification_error"`
	NotificationAttemptCount  int        `gorm:"column:notification_attempt_count"`
	EventFingerprint          *string    `gorm:"column:event_fingerprint"`
	EventVersion              int        `gorm:"column:event_version"`
	NotifiedVersion           int        `gorm:"column:notified_version"`
	LastPolledAt              *time.Time `gorm:"column:last_polled_at"`
	LastPollError             *string    `gorm:"column:last_poll_error"`
	PollAttemptCount          int        `gorm:"column:poll_attempt_count"`
	ConsecutivePollErrorCount int        `gorm:"column:consecutive_poll_error_count"`
	NextPollAt                *time.Time `gorm:"column:next_poll_at"`
	CancelRequestedAt         *time.Time `gorm:"column:cancel_requested_at"`
	CancelSignalledAt         *time.Time `gorm:"column:cancel_signalled_at"`
	CancelAttemptCount        int        `gorm:"column:cancel_attempt_count"`
	LastCancelError           *string    `gorm:"column:last_cancel_error"`
	CompletedAt               *time.Time `gorm:"column:completed_at"`
	CreatedAt                 time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt                 time.Time  `gorm:"column:updated_at;autoUpdateTime:false"`
	QuestionSeq               int        `gorm:"column:question_seq"`
	RowVersion                int        `gorm:"column:row_version"`
}

// TableName implements gorm's Tabler.
func (taskRow) TableName() string { return "mcp_tasks" }

// pollableStatuses are the statuses ListTasks keeps with ActiveOnly.
var pollableStatuses = func() []string {
	var out []string
	for _, s := range mcpflow.Statuses {
		if s.IsPollable() {
			out = append(out, string(s))
		}
	}
	return out
}()

// newTaskRow converts a task to its row. Timestamps are stored in UTC at
// microsecond precision.
func newTaskRow(t *mcpflow.Task) (*taskRow, error) {
	r := &taskRow{
		ID:                        t.ID,
		WorkflowID:                t.ID,
		UserID:                    t.UserID,
		ThreadID:                  t.ThreadID,
		RunID:                     t.RunID,
		ToolCallID:                t.ToolCallID,
		ServerName:                t.ServerName,
		DriverName:                t.DriverName,
		RemoteTaskID:              t.RemoteTaskID,
		TaskName:                  t.TaskName,
		Status:                    string(t.Status),
		ResultPreview:             t.ResultPreview,
		ResultTruncated:           t.ResultTruncated,
		Content:                   contentColumn(t.Content),
		ResultStructured:          t.ResultStructured,
		Error:                     t.Error,
		InputAnswerable:           t.InputAnswerable,
		StatusMessage:             t.StatusMessage,
		NotificationStatus:        t.NotificationStatus,
		NotificationError:         t.NotificationError,
		NotificationAttemptCount:  t.NotificationAttemptCount,
		EventFingerprint:          t.EventFingerprint,
		EventVersion:              t.EventVersion,
		NotifiedVersion:           t.NotifiedVersion,
		LastPolledAt:              dbTimePtr(t.LastPolledAt),
		LastPollError:             t.LastPollError,
		PollAttemptCount:          t.PollAttemptCount,
		ConsecutivePollErrorCount: t.ConsecutivePollErrorCount,
		NextPollAt:                dbTimePtr(t.NextPollAt),
		CancelRequestedAt:         dbTimePtr(t.CancelRequestedAt),
		CancelAttemptCount:        t.CancelAttemptCount,
		LastCancelError:           t.LastCancelError,
		CompletedAt:               dbTimePtr(t.CompletedAt),
		CreatedAt:                 dbTime(t.CreatedAt),
		UpdatedAt:                 dbTime(t.UpdatedAt),
	}
	// A nil map encodes as JSON null, stored as NULL.
	for _, c := range []struct {
		name string
		col  **string
		v    any
	}{{"result", &r.Result, t.Result}, {"result_artifact", &r.ResultArtifact, t.ResultArtifact}, {"input_required", &r.InputRequired, t.InputRequired}} {
		var err error
		if *c.col, err = encodeJSON(c.name, c.v); err != nil {
			return nil, err
		}
	}
	dd, err := encodeJSON("driver_data", t.DriverData)
	if err != nil {
		return nil, err
	}
	r.DriverData = "{}"
	if dd != nil {
		r.DriverData = *dd
	}
	return r, nil
}

// task converts a row back to the domain type.
func (r *taskRow) task() (*mcpflow.Task, error) {
	t := &mcpflow.Task{
		ID:                        r.ID,
		UserID:                    r.UserID,
		ThreadID:                  r.ThreadID,
		RunID:                     r.RunID,
		ToolCallID:                r.ToolCallID,
		ServerName:                r.ServerName,
		DriverName:                r.DriverName,
		RemoteTaskID:              r.RemoteTaskID,
		TaskName:                  r.TaskName,
		Status:                    mcpflow.Status(r.Status),
		ResultPreview:             r.ResultPreview,
		ResultTruncated:           r.ResultTruncated,
		ResultStructured:          r.ResultStructured,
		Error:                     r.Error,
		InputAnswerable:           r.InputAnswerable,
		StatusMessage:             r.StatusMessage,
		NotificationStatus:        r.NotificationStatus,
		NotificationError:         r.NotificationError,
		NotificationAttemptCount:  r.NotificationAttemptCount,
		EventFingerprint:          r.EventFingerprint,
		EventVersion:              r.EventVersion,
		NotifiedVersion:           r.NotifiedVersion,
		LastPolledAt:              utcPtr(r.LastPolledAt),
		LastPollError:             r.LastPollError,
		PollAttemptCount:          r.PollAttemptCount,
		ConsecutivePollErrorCount: r.ConsecutivePollErrorCount,
		NextPollAt:                utcPtr(r.NextPollAt),
		CancelRequestedAt:         utcPtr(r.CancelRequestedAt),
		CancelSignalledAt:         utcPtr(r.CancelSignalledAt),
		CancelAttemptCount:        r.CancelAttemptCount,
		LastCancelError:           r.LastCancelError,
		CompletedAt:               utcPtr(r.CompletedAt),
		CreatedAt:                 r.CreatedAt.UTC(),
		UpdatedAt:                 r.UpdatedAt.UTC(),
		QuestionSeq:               r.QuestionSeq,
		RowVersion:                r.RowVersion,
	}
	if r.Content != nil {
		t.Content = json.RawMessage(*r.Content)
	}
	dd := r.DriverData
	for _, c := range []struct {
		name string
		col  *string
		dst  any
	}{{"result", r.Result, &t.Result}, {"result_artifact", r.ResultArtifact, &t.ResultArtifact}, {"input_required", r.InputRequired, &t.InputRequired}, {"driver_data", &dd, &t.DriverData}} {
		if err := decodeJSON(c.name, c.col, c.dst); err != nil {
			return nil, fmt.Errorf("task %s: %w", r.ID, err)
		}
	}
	if t.DriverData == nil {
		t.DriverData = map[string]string{}
	}
	return t, nil
}

// CreateTask inserts a new task projection. It fills in, on t too: a fresh
// id when ID is empty, CreatedAt and UpdatedAt when zero, NotificationStatus
// "none" when empty, and CompletedAt when the status is terminal and it is
// unset. Timestamps are stored, and written back to t, in UTC at microsecond
// precision.
//
// The insert consumes the running-task slot reserved for its id
// (ReserveTaskSlot), in the same transaction.
//
// A second task with the same (user, server, remote task id) fails with a
// *mcpflow.DuplicateRemoteTaskError. A second task with the same id is an
// mcpflow.EConflict error that also matches gorm.ErrDuplicatedKey (the
// workflow's persist step uses it to make its create idempotent). Any other
// constraint violation (a missing thread) is a wrapped storage error that
// matches gorm.ErrForeignKeyViolated.
func (db *DB) CreateTask(ctx context.Context, t *mcpflow.Task) error {
	if t == nil {
		return invalid("task must not be nil")
	}
	if !t.Status.Valid() {
		return invalid("unknown MCP task status %q", string(t.Status))
	}
	c := *t
	if c.ID == "" {
		c.ID = mcpflow.NewTaskID()
	}
	now := db.now()
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	if c.NotificationStatus == "" {
		c.NotificationStatus = mcpflow.NotificationNone
	}
	if c.Status.IsTerminal() && c.CompletedAt == nil {
		at := c.UpdatedAt
		c.CompletedAt = &at
	}
	row, err := newTaskRow(&c)
	if err != nil {
		return fmt.Errorf("create task %s: %w", c.ID, err)
	}
	row.QuestionSeq, row.RowVersion = 0, 1
	if c.Status == mcpflow.StatusInputRequired {
		row.QuestionSeq = 1
	}
	// The row consumes the task's running-task slot (ReserveTaskSlot): it
	// counts from now on, in the same transaction, and keeps the slot's
	// request hash.
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(row).Error; err != nil {
			return err
		}
		// The request hash of a submit with an idempotency key stays with
		// the row (ReserveTaskSlot compares a retry's with it).
		err := tx.Exec("UPDATE mcp_tasks SET request_hash = (SELECT request_hash FROM mcp_task_slots WHERE task_id = ?) WHERE id = ? AND EXISTS (SELECT 1 FROM mcp_task_slots WHERE task_id = ? AND request_hash <> '')",
			row.ID, row.ID, row.ID).Error
		if err != nil {
			return err
		}
		return tx.Where("task_id = ?", row.ID).Delete(&taskSlotRow{}).Error
	})
	if err != nil {
		if isDuplicateRemoteTask(err) {
			return fmt.Errorf("create task %s: %w", c.ID, &mcpflow.DuplicateRemoteTaskError{ServerName: c.ServerName, RemoteTaskID: c.RemoteTaskID})
		}
		if isDuplicateTaskID(err) {
			return &mcpflow.Error{Code: mcpflow.EConflict,
				Message: fmt.Sprintf("MCP task '%s' already exists", c.ID), Err: err}
		}
		return fmt.Errorf("create task %s: %w", c.ID, err)
	}
	c.CreatedAt = row.CreatedAt
	c.UpdatedAt = row.UpdatedAt
	c.LastPolledAt = row.LastPolledAt
	c.NextPollAt = row.NextPollAt
	c.CancelRequestedAt = row.CancelRequestedAt
	c.CompletedAt = row.CompletedAt
	c.QuestionSeq = row.QuestionSeq
	c.RowVersion = row.RowVersion
	*t = c
	return nil
}

// GetTask returns the task with that id, or an mcpflow.ENotFound error.
// Ownership is the caller's check.
func (db *DB) GetTask(ctx context.Context, id string) (*mcpflow.Task, error) {
	var row taskRow
	err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound("MCP task not found")
	}
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	t, err := row.task()
	if err != nil {
		return nil, fmt.Errorf("get task: %w", err)
	}
	return t, nil
}

// ListTasks returns the user's tasks, of one thread when ThreadID is set,
// newest first (created_at DESC, id DESC). Limit 0 means 50; other values
// are clamped to 1..100. ActiveOnly keeps the pollable statuses; After
// continues after a task of an earlier page. UserID is required.
func (db *DB) ListTasks(ctx context.Context, f mcpflow.TaskFilter) ([]*mcpflow.Task, error) {
	if f.UserID == "" {
		return nil, invalid("user_id is required to list MCP tasks")
	}
	q := db.gorm.WithContext(ctx).Where("user_id = ?", f.UserID)
	if f.ThreadID != "" {
		q = q.Where("thread_id = ?", f.ThreadID)
	}
	if f.ActiveOnly {
		q = q.Where("status IN ?", pollableStatuses)
	}
	if c := f.After; c != nil {
		at := dbTime(c.CreatedAt)
		q = q.Where("created_at < ? OR (created_at = ? AND id < ?)", at, at, c.ID)
	}
	var rows []taskRow
	err := q.Order("created_at DESC").Order("id DESC").Limit(taskListLimit(f.Limit)).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out := make([]*mcpflow.Task, 0, len(rows))
	for i := range rows {
		t, err := rows[i].task()
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func taskListLimit(n int) int {
	switch {
	case n == 0:
		return DefaultTaskListLimit
	case n < 1:
		return 1
	case n > MaxTaskListLimit:
		return MaxTaskListLimit
	}
	return n
}

// UpdateTask writes the whole projection of an existing task except id
// and created_at, and sets UpdatedAt to now, on t too. The store keeps two
// counters: row_version grows by one with every write, and question_seq
// grows by one when the write puts the task into input_required or changes
// its question (input_required), and is kept otherwise; t's values of both
// are not written. With t.RowVersion non-zero the row is written only if
// it still has that version (a writer that read the row cannot overwrite a
// newer write): otherwise an mcpflow.EConflict error, and t.RowVersion is
// the new version after a write. A missing task is an mcpflow.ENotFound
// error.
func (db *DB) UpdateTask(ctx context.Context, t *mcpflow.Task) error {
	return db.updateTask(ctx, db.gorm.WithContext(ctx), t)
}

// UpdateTaskWithEvent implements mcpflow.TaskEventWriter: it appends e to
// the thread inbox (as AppendEvent) and writes t (as UpdateTask) in one
// transaction, so that a write refused by its row version (EConflict)
// leaves no event behind either. Errors are those of both; on any of
// them nothing was written.
func (db *DB) UpdateTaskWithEvent(ctx context.Context, t *mcpflow.Task, e *mcpflow.ThreadEvent) (int64, error) {
	created, err := db.checkEvent(e)
	if err != nil {
		return 0, err
	}
	var stored eventRow
	done := *t
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The thread row first, as AppendEvent and DeleteThread lock it.
		var err error
		if stored, err = appendEventTx(tx, e, created); err != nil {
			return fmt.Errorf("append event of task %s version %d: %w", e.TaskID, e.EventVersion, err)
		}
		return db.updateTask(ctx, tx, &done)
	})
	if err != nil {
		return 0, asUnavailable(err)
	}
	*t = done
	e.Seq = stored.Seq
	e.CreatedAt = stored.CreatedAt.UTC()
	db.signalAppend(stored.ref(), stored.Seq)
	return stored.Seq, nil
}

// updateTask is UpdateTask on tx.
func (db *DB) updateTask(ctx context.Context, tx *gorm.DB, t *mcpflow.Task) error {
	if t == nil {
		return invalid("task must not be nil")
	}
	if !t.Status.Valid() {
		return invalid("unknown MCP task status %q", string(t.Status))
	}
	c := *t
	c.UpdatedAt = db.now()
	if c.NotificationStatus == "" {
		c.NotificationStatus = mcpflow.NotificationNone
	}
	row, err := newTaskRow(&c)
	if err != nil {
		return fmt.Errorf("update task %s: %w", c.ID, err)
	}
	set, err := db.taskColumns(ctx, row)
	if err != nil {
		return fmt.Errorf("update task %s: %w", c.ID, err)
	}
	set["row_version"] = gorm.Expr("row_version + 1")
	if row.LastPolledAt != nil {
		// Never backwards: TouchPolled records polls that changed nothing
		// without a whole-row write, and a writer's copy of the row may be
		// older than the last of them.
		set["last_polled_at"] = gorm.Expr("CASE WHEN last_polled_at IS NULL OR last_polled_at < ? THEN ? ELSE last_polled_at END",
			*row.LastPolledAt, *row.LastPolledAt)
	}
	if c.Status == mcpflow.StatusInputRequired {
		// Compared with the row as it was (the right-hand sides of an
		// UPDATE read the old row, on both backends).
		distinct := "IS NOT" // SQLite's null-safe inequality
		if db.backend == BackendPostgres {
			distinct = "IS DISTINCT FROM"
		}
		set["question_seq"] = gorm.Expr("CASE WHEN status <> ? OR input_required "+distinct+" ? THEN question_seq + 1 ELSE question_seq END",
			string(mcpflow.StatusInputRequired), row.InputRequired)
	}
	q := tx.Model(&taskRow{}).Where("id = ?", c.ID)
	if t.RowVersion != 0 {
		q = q.Where("row_version = ?", t.RowVersion)
	}
	res := q.Updates(set)
	if res.Error != nil {
		if isDuplicateRemoteTask(res.Error) {
			return fmt.Errorf("update task %s: %w", c.ID, &mcpflow.DuplicateRemoteTaskError{ServerName: c.ServerName, RemoteTaskID: c.RemoteTaskID})
		}
		return fmt.Errorf("update task %s: %w", c.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		if t.RowVersion != 0 {
			var n int64
			if err := tx.Model(&taskRow{}).Where("id = ?", c.ID).Count(&n).Error; err != nil {
				return fmt.Errorf("update task %s: %w", c.ID, err)
			}
			if n == 0 {
				return notFound("MCP task not found")
			}
			return &mcpflow.Error{Code: mcpflow.EConflict,
				Message: fmt.Sprintf("MCP task '%s' was written since it was read (row version %d)", c.ID, t.RowVersion)}
		}
		return notFound("MCP task not found")
	}
	t.UpdatedAt = row.UpdatedAt
	t.LastPolledAt = row.LastPolledAt
	t.NextPollAt = row.NextPollAt
	t.CancelRequestedAt = row.CancelRequestedAt
	t.CompletedAt = row.CompletedAt
	t.NotificationStatus = c.NotificationStatus
	if t.RowVersion != 0 {
		t.RowVersion++
	}
	return nil
}

// taskColumns returns the columns UpdateTask writes from row: every column
// but id, created_at, the counters the store keeps itself and
// cancel_signalled_at (RecordCancelSignal's).
func (db *DB) taskColumns(ctx context.Context, row *taskRow) (map[string]any, error) {
	stmt := &gorm.Statement{DB: db.gorm}
	if err := stmt.Parse(row); err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(row).Elem()
	set := make(map[string]any, len(stmt.Schema.Fields))
	for _, f := range stmt.Schema.Fields {
		switch f.DBName {
		case "", "id", "created_at", "question_seq", "row_version", "cancel_signalled_at":
			continue
		}
		v, _ := f.ValueOf(ctx, rv)
		set[f.DBName] = v
	}
	return set, nil
}

// RecordCancelSignal implements mcpflow.CancelRecorder: cancel_signalled_at
// becomes at unless the row has one or the task ended; nothing else of
// the row changes (not updated_at, not row_version, not
// cancel_requested_at, which the workflow writes when it takes the
// request: a poll in flight then still writes what it found). It reports
// whether the row was written.
func (db *DB) RecordCancelSignal(ctx context.Context, id string, at time.Time) (bool, error) {
	res := db.gorm.WithContext(ctx).Model(&taskRow{}).
		Where("id = ? AND status IN ? AND cancel_signalled_at IS NULL", id, pollableStatuses).
		UpdateColumn("cancel_signalled_at", dbTime(at))
	if res.Error != nil {
		return false, fmt.Errorf("record the cancel signal of task %s: %w", id, asUnavailable(res.Error))
	}
	return res.RowsAffected == 1, nil
}

// TouchPolled records that the task's remote status was read at at (a
// poll that changed nothing the user sees): last_polled_at moves to at
// unless it is later already; nothing else of the row changes (not
// updated_at, not row_version), and a task that ended is left alone. It
// reports whether the row was written.
func (db *DB) TouchPolled(ctx context.Context, id string, at time.Time) (bool, error) {
	t := dbTime(at)
	res := db.gorm.WithContext(ctx).Model(&taskRow{}).
		Where("id = ? AND status IN ? AND (last_polled_at IS NULL OR last_polled_at < ?)", id, pollableStatuses, t).
		UpdateColumn("last_polled_at", t)
	if res.Error != nil {
		return false, fmt.Errorf("record the poll of task %s: %w", id, asUnavailable(res.Error))
	}
	return res.RowsAffected > 0, nil
}

// CountTasksByStatus returns how many tasks are in each status.
func (db *DB) CountTasksByStatus(ctx context.Context) (map[mcpflow.Status]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	if err := db.gorm.WithContext(ctx).Model(&taskRow{}).Select("status, count(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count tasks by status: %w", err)
	}
	out := map[mcpflow.Status]int64{}
	for _, r := range rows {
		out[mcpflow.Status(r.Status)] = r.N
	}
	return out, nil
}
