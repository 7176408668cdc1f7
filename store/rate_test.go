package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent takes never get more than the bucket holds, refill follows
// the rate, and a new bucket starts full.
func TestTakeTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
		var took atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					n, _, err := db.TakeTokens(ctx, "k1", 0.5, 10, 3, 0, now)
					if err != nil {
						t.Error(err)
						return
					}
					took.Add(int64(n))
				}
			}()
		}
		wg.Wait()
		if took.Load() != 10 {
			t.Fatalf("took %d tokens of a bucket of 10", took.Load())
		}
		n, wait, err := db.TakeTokens(ctx, "k1", 0.5, 10, 3, 0, now)
		if err != nil || n != 0 || wait != 2*time.Second {
			t.Fatalf("empty bucket: %d, %v, %v; want 0, 2s", n, wait, err)
		}
		// 7 s later at 0.5/s: 3.5 tokens, 3 whole ones.
		n, _, err = db.TakeTokens(ctx, "k1", 0.5, 10, 5, 0, now.Add(7*time.Second))
		if err != nil || n != 3 {
			t.Fatalf("after 7 s: %d, %v; want 3", n, err)
		}
		// Tokens given back count again, up to the burst.
		if n, _, err := db.TakeTokens(ctx, "k1", 0.5, 10, 5, 2, now.Add(7*time.Second)); err != nil || n != 2 {
			t.Fatalf("after giving 2 back: %d, %v; want 2", n, err)
		}
		// An hour later the bucket is full again, not fuller.
		n, _, err = db.TakeTokens(ctx, "k1", 0.5, 10, 50, 0, now.Add(time.Hour))
		if err != nil || n != 10 {
			t.Fatalf("after an hour: %d, %v; want 10", n, err)
		}
		if _, _, err := db.TakeTokens(ctx, "", 1, 1, 1, 0, now); err == nil {
			t.Fatal("an empty key was accepted")
		}
	})
}

func TestTakeQuota(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		day := time.Date(2026, 12, 5, 23, 59, 0, 0, time.UTC)
		var took atomic.Int64
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					n, err := db.TakeQuota(ctx, "q1", 7, 2, 0, day)
					if err != nil {
						t.Error(err)
						return
					}
					took.Add(int64(n))
				}
			}()
		}
		wg.Wait()
		if took.Load() != 7 {
			t.Fatalf("took %d of a daily quota of 7", took.Load())
		}
		// Giving back 1 of the day's 7 makes room for 1.
		if n, err := db.TakeQuota(ctx, "q1", 7, 2, 1, day); err != nil || n != 1 {
			t.Fatalf("after giving 1 back: %d, %v; want 1", n, err)
		}
		n, err := db.TakeQuota(ctx, "q1", 7, 2, 0, day.Add(2*time.Minute)) // the next UTC day
		if err != nil || n != 2 {
			t.Fatalf("next day: %d, %v; want 2", n, err)
		}
	})
}
