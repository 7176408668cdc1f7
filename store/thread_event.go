package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/mcpflow/mcpflow"
)

// Page sizes of ListEvents.
const (
	DefaultEventListLimit = 100
	MaxEventListLimit     = 1000
)

// eventRow is one row of thread_events.
type eventRow struct {
	Seq          int64     `gorm:"column:seq;primaryKey;autoIncrement"`
	UserID       string    `gorm:"column:user_id"`
	ThreadID     string    `gorm:"column:thread_id"`
	TaskID       string    `gorm:"column:task_id"`
	EventVersion int       `gorm:"column:event_version"`
	Status       string    `gorm:"column:status"`
	Payload      string    `gorm:"column:payload"`
	CreatedAt    time.Time `gorm:"column:created_at;autoCreateTime:false"`
}

// TableName implements gorm's Tabler.
func (eventRow) TableName() string { return "thread_events" }

func (r *eventRow) event() *mcpflow.ThreadEvent {
	return &mcpflow.ThreadEvent{
		Seq:          r.Seq,
		UserID:       r.UserID,
		ThreadID:     r.ThreadID,
		TaskID:       r.TaskID,
		EventVersion: r.EventVersion,
		Status:       mcpflow.Status(r.Status),
		Payload:      json.RawMessage(r.Payload),
		CreatedAt:    r.CreatedAt.UTC(),
	}
}

// AppendEvent appends e to the inbox of its thread (e.UserID, e.ThreadID)
// and returns its sequence number. Appending the same (task id, event
// version) again returns the first sequence number and adds no row. It sets
// e.Seq and e.CreatedAt (now when zero) to the stored values. A missing
// thread is an mcpflow.ENotFound error and a deleted one an mcpflow.EGone
// error. The payload must be a JSON value.
func (db *DB) AppendEvent(ctx context.Context, e *mcpflow.ThreadEvent) (int64, error) {
	created, err := db.checkEvent(e)
	if err != nil {
		return 0, err
	}
	var stored eventRow
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		stored, err = appendEventTx(tx, e, created)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("append event of task %s version %d: %w", e.TaskID, e.EventVersion, asUnavailable(err))
	}
	e.Seq = stored.Seq
	e.CreatedAt = stored.CreatedAt.UTC()
	db.signalAppend(stored.ref(), stored.Seq)
	return stored.Seq, nil
}

// ref names the row's thread.
func (r *eventRow) ref() mcpflow.ThreadRef {
	return mcpflow.ThreadRef{UserID: r.UserID, ThreadID: r.ThreadID}
}

// checkEvent checks an event to append and returns its creation time (now
// when unset).
func (db *DB) checkEvent(e *mcpflow.ThreadEvent) (time.Time, error) {
	if e == nil {
		return time.Time{}, invalid("event must not be nil")
	}
	if e.TaskID == "" {
		return time.Time{}, invalid("event task_id must not be empty")
	}
	if e.UserID == "" {
		return time.Time{}, invalid("event user_id must not be empty")
	}
	if !json.Valid(e.Payload) {
		return time.Time{}, invalid("event payload must be valid JSON")
	}
	if e.CreatedAt.IsZero() {
		return db.now(), nil
	}
	return e.CreatedAt, nil
}

// appendEventTx appends e in the transaction tx (see AppendEvent) and
// returns the stored row: the new one, or the one already stored for the
// task's version.
func appendEventTx(tx *gorm.DB, e *mcpflow.ThreadEvent, created time.Time) (eventRow, error) {
	var stored eventRow
	// Locking the thread row serializes the appends of one thread, so
	// their seq values commit in order and a reader's "after" cursor
	// never skips an event that commits late; it also holds off a
	// concurrent DeleteThread. (PostgreSQL; SQLite write transactions
	// are serial already.)
	var th threadRow
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("user_id = ? AND id = ?", e.UserID, e.ThreadID).Take(&th).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return stored, notFound("thread not found")
	}
	if err != nil {
		return stored, fmt.Errorf("read thread: %w", err)
	}
	if th.DeletedAt != nil {
		return stored, gone("thread has been deleted")
	}
	row := eventRow{
		UserID:       e.UserID,
		ThreadID:     e.ThreadID,
		TaskID:       e.TaskID,
		EventVersion: e.EventVersion,
		Status:       string(e.Status),
		Payload:      string(e.Payload),
		CreatedAt:    dbTime(created),
	}
	res := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "task_id"}, {Name: "event_version"}},
		DoNothing: true,
	}).Create(&row)
	if res.Error != nil {
		return stored, fmt.Errorf("insert: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return row, nil
	}
	err = tx.Where("task_id = ? AND event_version = ?", e.TaskID, e.EventVersion).Take(&stored).Error
	if err != nil {
		return stored, fmt.Errorf("read existing: %w", err)
	}
	return stored, nil
}

// GetEvent returns one version of a task's event, or an mcpflow.ENotFound
// error.
func (db *DB) GetEvent(ctx context.Context, taskID string, version int) (*mcpflow.ThreadEvent, error) {
	var row eventRow
	err := db.gorm.WithContext(ctx).Where("task_id = ? AND event_version = ?", taskID, version).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound("event not found")
	}
	if err != nil {
		return nil, fmt.Errorf("get event of task %s version %d: %w", taskID, version, err)
	}
	return row.event(), nil
}

// appendSub is one SubscribeAppends subscription.
type appendSub struct {
	fn func(thread mcpflow.ThreadRef, seq int64)
}

// SubscribeAppends calls fn with the thread and seq of every event this
// process appends from now on (after its transaction committed, also for an
// append that found its event already stored), until the returned func is
// called. fn runs on the appending goroutine and must not block. Appends
// of other processes are not seen: ThreadsWithEventsAfter finds those.
func (db *DB) SubscribeAppends(fn func(thread mcpflow.ThreadRef, seq int64)) (unsubscribe func()) {
	sub := &appendSub{fn: fn}
	db.appendMu.Lock()
	if db.appendSubs == nil {
		db.appendSubs = map[*appendSub]struct{}{}
	}
	db.appendSubs[sub] = struct{}{}
	db.appendMu.Unlock()
	return func() {
		db.appendMu.Lock()
		defer db.appendMu.Unlock()
		delete(db.appendSubs, sub)
	}
}

func (db *DB) signalAppend(thread mcpflow.ThreadRef, seq int64) {
	db.appendMu.Lock()
	subs := make([]*appendSub, 0, len(db.appendSubs))
	for sub := range db.appendSubs {
		subs = append(subs, sub)
	}
	db.appendMu.Unlock()
	for _, sub := range subs {
		sub.fn(thread, seq)
	}
}

// ListEvents returns the thread's events with Seq > after in ascending
// order, at most limit of them (0 means 100; clamped to 1..1000). It does not
// check the thread; an unknown thread has no events. Payloads come back as
// equivalent JSON, not byte for byte: PostgreSQL's JSONB normalizes spacing
// and key order.
func (db *DB) ListEvents(ctx context.Context, thread mcpflow.ThreadRef, after int64, limit int) ([]*mcpflow.ThreadEvent, error) {
	switch {
	case limit == 0:
		limit = DefaultEventListLimit
	case limit < 1:
		limit = 1
	case limit > MaxEventListLimit:
		limit = MaxEventListLimit
	}
	var rows []eventRow
	err := db.gorm.WithContext(ctx).
		Where("user_id = ? AND thread_id = ? AND seq > ?", thread.UserID, thread.ThreadID, after).
		Order("seq ASC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list events of thread %s: %w", thread.ThreadID, err)
	}
	out := make([]*mcpflow.ThreadEvent, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].event())
	}
	return out, nil
}

// LatestEventSeq returns the highest seq of the thread's events, of all
// threads for the zero ThreadRef (0 when there are none).
func (db *DB) LatestEventSeq(ctx context.Context, thread mcpflow.ThreadRef) (int64, error) {
	q := db.gorm.WithContext(ctx).Model(&eventRow{})
	if thread != (mcpflow.ThreadRef{}) {
		q = q.Where("user_id = ? AND thread_id = ?", thread.UserID, thread.ThreadID)
	}
	var seq *int64
	if err := q.Select("MAX(seq)").Scan(&seq).Error; err != nil {
		return 0, fmt.Errorf("latest event seq: %w", err)
	}
	if seq == nil {
		return 0, nil
	}
	return *seq, nil
}

// ThreadsWithEventsAfter returns the threads that have events with seq >
// after, each with its highest seq: one query, whatever the number of
// threads waited on. It returns at most limit threads (clamped to
// 1..MaxEventListLimit; which ones is unspecified when more qualify, so a
// caller that gets limit of them must assume it missed some).
func (db *DB) ThreadsWithEventsAfter(ctx context.Context, after int64, limit int) (map[mcpflow.ThreadRef]int64, error) {
	limit = min(max(limit, 1), MaxEventListLimit)
	var rows []struct {
		UserID   string `gorm:"column:user_id"`
		ThreadID string `gorm:"column:thread_id"`
		Seq      int64  `gorm:"column:seq"`
	}
	err := db.gorm.WithContext(ctx).Model(&eventRow{}).Select("user_id, thread_id, MAX(seq) AS seq").
		Where("seq > ?", after).Group("user_id, thread_id").Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("threads with events after seq %d: %w", after, err)
	}
	out := make(map[mcpflow.ThreadRef]int64, len(rows))
	for _, r := range rows {
		out[mcpflow.ThreadRef{UserID: r.UserID, ThreadID: r.ThreadID}] = r.Seq
	}
	return out, nil
}
