package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/mcpflow/mcpflow"
)

type rateBucketRow struct {
	Key       string    `gorm:"column:bucket_key;primaryKey"`
	Tokens    float64   `gorm:"column:tokens"`
	UpdatedAt time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

// TableName implements gorm's Tabler.
func (rateBucketRow) TableName() string { return "rate_buckets" }

type rateQuotaRow struct {
	Key  string `gorm:"column:quota_key;primaryKey"`
	Day  string `gorm:"column:day;primaryKey"`
	Used int64  `gorm:"column:used"`
}

// TableName implements gorm's Tabler.
func (rateQuotaRow) TableName() string { return "rate_quotas" }

var _ mcpflow.RateStore = (*DB)(nil)

// TakeTokens implements mcpflow.RateStore: one transaction that locks the
// bucket's row (PostgreSQL: SELECT ... FOR UPDATE; SQLite: the database's
// write lock), refills it and takes from it, so replicas never take more
// than the bucket holds between them. A new bucket starts full.
func (db *DB) TakeTokens(ctx context.Context, key string, perSecond float64, burst, want, giveBack int, now time.Time) (int, time.Duration, error) {
	if key == "" || burst < 1 || want < 1 || giveBack < 0 || perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return 0, 0, invalid("a rate bucket needs a key, a burst and a want of at least 1, and a finite rate")
	}
	now = dbTime(now)
	var took int
	var wait time.Duration
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rateBucketRow{Key: key, Tokens: float64(burst), UpdatedAt: now}).Error; err != nil {
			return err
		}
		var b rateBucketRow
		q := tx.Where("bucket_key = ?", key)
		if db.backend == BackendPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Take(&b).Error; err != nil {
			return err
		}
		tokens := b.Tokens
		if dt := now.Sub(b.UpdatedAt).Seconds(); dt > 0 {
			tokens = math.Min(float64(burst), tokens+dt*perSecond)
		}
		tokens = math.Min(tokens+float64(giveBack), float64(burst)) // (also a lowered burst)
		took = min(want, int(math.Floor(tokens)))
		tokens -= float64(took)
		if took == 0 {
			if perSecond == 0 {
				wait = 24 * time.Hour
			} else {
				wait = time.Duration((1 - tokens) / perSecond * float64(time.Second))
			}
		}
		return tx.Model(&rateBucketRow{}).Where("bucket_key = ?", key).
			Updates(map[string]any{"tokens": tokens, "updated_at": maxTime(now, b.UpdatedAt)}).Error
	})
	if err != nil {
		return 0, 0, fmt.Errorf("take rate tokens: %w", asUnavailable(err))
	}
	return took, wait, nil
}

// TakeQuota implements mcpflow.RateStore, like TakeTokens with the day's
// counter row.
func (db *DB) TakeQuota(ctx context.Context, key string, limit, want, giveBack int, now time.Time) (int, error) {
	if key == "" || limit < 1 || want < 1 || giveBack < 0 {
		return 0, invalid("a quota needs a key, a limit and a want of at least 1")
	}
	day := now.UTC().Format(time.DateOnly)
	var took int
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rateQuotaRow{Key: key, Day: day}).Error; err != nil {
			return err
		}
		var r rateQuotaRow
		q := tx.Where("quota_key = ? AND day = ?", key, day)
		if db.backend == BackendPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Take(&r).Error; err != nil {
			return err
		}
		used := max(0, r.Used-int64(giveBack))
		took = int(min(int64(want), max(0, int64(limit)-used)))
		if used+int64(took) == r.Used {
			return nil
		}
		return tx.Model(&rateQuotaRow{}).Where("quota_key = ? AND day = ?", key, day).Update("used", used+int64(took)).Error
	})
	if err != nil {
		return 0, fmt.Errorf("take quota: %w", asUnavailable(err))
	}
	// Earlier days' counters go with the first take of a day (best effort).
	if took > 0 {
		_ = db.gorm.WithContext(ctx).Where("quota_key = ? AND day < ?", key, day).Delete(&rateQuotaRow{}).Error
	}
	return took, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
