package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/mcpflow/mcpflow"
)

// threadRow is one row of threads. DeletedAt is a plain column, not GORM's
// soft delete: tombstoned threads must stay visible to the store.
type threadRow struct {
	ID        string     `gorm:"column:id;primaryKey"`
	UserID    string     `gorm:"column:user_id;primaryKey"`
	CreatedAt time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	DeletedAt *time.Time `gorm:"column:deleted_at"`
}

// TableName implements gorm's Tabler.
func (threadRow) TableName() string { return "threads" }

func (r *threadRow) thread() *mcpflow.Thread {
	return &mcpflow.Thread{
		ID:        r.ID,
		UserID:    r.UserID,
		CreatedAt: r.CreatedAt.UTC(),
		DeletedAt: utcPtr(r.DeletedAt),
	}
}

// CreateThread creates the thread t.ID for t.UserID and returns it with
// created true; CreatedAt defaults to now and DeletedAt is ignored. Thread
// ids are per user: another user's thread of the same id is not in the way.
// When the user has that id already it returns the existing thread with
// created false, or an mcpflow.EGone error if the user deleted it (ids are
// never resurrected). Ids must pass mcpflow.ValidateID.
func (db *DB) CreateThread(ctx context.Context, t *mcpflow.Thread) (*mcpflow.Thread, bool, error) {
	if t == nil {
		return nil, false, invalid("thread must not be nil")
	}
	if err := mcpflow.ValidateID("thread_id", t.ID); err != nil {
		return nil, false, err
	}
	if err := mcpflow.ValidateID("user_id", t.UserID); err != nil {
		return nil, false, err
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = db.now()
	}
	row := threadRow{ID: t.ID, UserID: t.UserID, CreatedAt: dbTime(created)}
	res := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "user_id"}, {Name: "id"}},
		DoNothing: true,
	}).Create(&row)
	if res.Error != nil {
		return nil, false, fmt.Errorf("create thread %s: %w", t.ID, res.Error)
	}
	if res.RowsAffected == 1 {
		return row.thread(), true, nil
	}
	var existing threadRow
	if err := db.gorm.WithContext(ctx).Where("user_id = ? AND id = ?", t.UserID, t.ID).Take(&existing).Error; err != nil {
		return nil, false, fmt.Errorf("create thread %s: read existing: %w", t.ID, err)
	}
	if existing.DeletedAt != nil {
		return nil, false, gone("thread has been deleted")
	}
	return existing.thread(), false, nil
}

// GetThread returns the user's thread of that id, deleted or not, or an
// mcpflow.ENotFound error. Tombstones are the caller's check.
func (db *DB) GetThread(ctx context.Context, userID, id string) (*mcpflow.Thread, error) {
	var row threadRow
	err := db.gorm.WithContext(ctx).Where("user_id = ? AND id = ?", userID, id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound("thread not found")
	}
	if err != nil {
		return nil, fmt.Errorf("get thread %s: %w", id, err)
	}
	return row.thread(), nil
}

// DeleteThread tombstones the user's thread at at. The tombstone is set
// once: deleting a deleted thread succeeds and keeps the first time. A
// missing thread is an mcpflow.ENotFound error.
func (db *DB) DeleteThread(ctx context.Context, userID, id string, at time.Time) error {
	if at.IsZero() {
		at = db.now()
	}
	res := db.gorm.WithContext(ctx).Model(&threadRow{}).
		Where("user_id = ? AND id = ? AND deleted_at IS NULL", userID, id).
		Update("deleted_at", dbTime(at))
	if res.Error != nil {
		return fmt.Errorf("delete thread %s: %w", id, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := db.GetThread(ctx, userID, id); err != nil {
		return fmt.Errorf("delete thread: %w", err)
	}
	return nil
}
