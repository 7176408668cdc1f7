package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// taskSlotRow is one row of mcp_task_slots: a running-task slot a submit
// holds until its task's row is inserted.
type taskSlotRow struct {
	TaskID      string    `gorm:"column:task_id;primaryKey"`
	UserID      string    `gorm:"column:user_id"`
	RequestHash string    `gorm:"column:request_hash"`
	CreatedAt   time.Time `gorm:"column:created_at;autoCreateTime:false"`
	ExpiresAt   time.Time `gorm:"column:expires_at"`
}

// TableName implements gorm's Tabler.
func (taskSlotRow) TableName() string { return "mcp_task_slots" }

var _ mcpflow.TaskSlots = (*DB)(nil)

// ReserveTaskSlot implements mcpflow.TaskSlots. The count and the insert
// are one transaction serialised per user: on PostgreSQL by a transaction
// advisory lock on the user id, on SQLite by the database's write lock
// (every transaction begins IMMEDIATE). So replicas sharing the database
// never grant more than s.Max slots between them. Lapsed slots of the user
// are deleted on the way. A task row whose request_hash is empty (its slot
// lapsed before it was stored) matches any request.
func (db *DB) ReserveTaskSlot(ctx context.Context, s mcpflow.TaskSlot) (mcpflow.SlotGrant, error) {
	if s.TaskID == "" || s.UserID == "" {
		return mcpflow.SlotGrant{}, invalid("a task slot needs a task id and a user id")
	}
	var g mcpflow.SlotGrant
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		g = mcpflow.SlotGrant{}
		if db.backend == BackendPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", slotLockID(s.UserID)).Error; err != nil {
				return fmt.Errorf("lock the user's task slots: %w", err)
			}
		}
		now := db.now()
		expires := dbTime(now.Add(s.TTL))
		// The same task again (a retried submit): the slot it holds, or
		// the row that consumed it.
		var own taskSlotRow
		err := tx.Where("task_id = ? AND user_id = ? AND expires_at > ?", s.TaskID, s.UserID, now).Take(&own).Error
		if err == nil {
			if own.RequestHash != s.RequestHash {
				g.OtherRequest = true
				return nil
			}
			g.Granted = true
			return tx.Model(&taskSlotRow{}).Where("task_id = ?", s.TaskID).Update("expires_at", expires).Error
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		var stored []string
		if err := tx.Model(&taskRow{}).Where("id = ?", s.TaskID).Pluck("request_hash", &stored).Error; err != nil {
			return err
		}
		if len(stored) > 0 {
			if stored[0] != "" && stored[0] != s.RequestHash {
				g.OtherRequest = true
				return nil
			}
			g.Granted, g.Stored = true, true
			return nil
		}
		if err := tx.Where("user_id = ? AND expires_at <= ?", s.UserID, now).Delete(&taskSlotRow{}).Error; err != nil {
			return err
		}
		if s.Max > 0 {
			// One statement, so one snapshot: CreateTask (not under the
			// lock) turns a slot into a row in one commit, and two counts
			// under READ COMMITTED could each miss it, granting one too many.
			var held int64
			if err := tx.Raw("SELECT (SELECT COUNT(*) FROM mcp_tasks WHERE user_id = ? AND status IN ?) + (SELECT COUNT(*) FROM mcp_task_slots WHERE user_id = ?)",
				s.UserID, pollableStatuses, s.UserID).Scan(&held).Error; err != nil {
				return err
			}
			if int(held) >= s.Max {
				g.Held = int(held)
				return nil
			}
		}
		g.Granted = true
		return tx.Create(&taskSlotRow{TaskID: s.TaskID, UserID: s.UserID, RequestHash: s.RequestHash,
			CreatedAt: dbTime(now), ExpiresAt: expires}).Error
	})
	if err != nil {
		return mcpflow.SlotGrant{}, fmt.Errorf("reserve a running-task slot: %w", asUnavailable(err))
	}
	return g, nil
}

// ReleaseTaskSlot implements mcpflow.TaskSlots.
func (db *DB) ReleaseTaskSlot(ctx context.Context, taskID string) error {
	if err := db.gorm.WithContext(ctx).Where("task_id = ?", taskID).Delete(&taskSlotRow{}).Error; err != nil {
		return fmt.Errorf("release the running-task slot of task %s: %w", taskID, asUnavailable(err))
	}
	return nil
}

// slotLockID is the advisory lock that serialises a user's slot
// reservations on PostgreSQL.
func slotLockID(userID string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("mcpflow task slots\x00" + userID))
	return int64(h.Sum64())
}
