package store

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/mcpflow/mcpflow"
)

// TestTaskSlotsCapParallelSubmits: 50 reservations of one user at once,
// through two stores on the same database (two replicas), grant exactly
// the cap; the others learn how many slots the user holds.
func TestTaskSlotsCapParallelSubmits(t *testing.T) {
	forEachBundle(t, func(t *testing.T, b *testBundle) {
		other, err := Open(testCtx, b.backend, b.dsn)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, other.Close()) })
		stores := []*DB{b.db, other}

		const n, max = 50, 2
		var mu sync.Mutex
		var granted []string
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := mcpflow.NewTaskID()
				g, err := stores[i%2].ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: id, UserID: "alice", Max: max, TTL: time.Hour})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if g.Granted {
					granted = append(granted, id)
				} else {
					assert.Equal(t, max, g.Held)
				}
			}()
		}
		wg.Wait()
		require.Len(t, granted, max)

		// Another user has slots of their own.
		g, err := b.db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: mcpflow.NewTaskID(), UserID: "bob", Max: max, TTL: time.Hour})
		require.NoError(t, err)
		require.True(t, g.Granted)
	})
}

// TestTaskSlotsLifecycle: a slot is consumed by its task's row (which then
// counts instead), released by a failed submit, lapses after its TTL, and
// reserving the same task id again is granted without counting it twice.
func TestTaskSlotsLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "th", "alice")
		slot := func(id string, ttl time.Duration) (bool, int) {
			t.Helper()
			g, err := db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: id, UserID: "alice", Max: 2, TTL: ttl})
			require.NoError(t, err)
			return g.Granted, g.Held
		}

		first := newTask("alice", "th", "r1")
		ok, _ := slot(first.ID, time.Hour)
		require.True(t, ok)
		ok, _ = slot(first.ID, time.Hour)
		require.True(t, ok, "the same task id again: its own slot")
		second := mcpflow.NewTaskID()
		ok, _ = slot(second, time.Hour)
		require.True(t, ok)
		ok, held := slot(mcpflow.NewTaskID(), time.Hour)
		require.False(t, ok)
		require.Equal(t, 2, held)

		// The row consumes the slot and counts in its place.
		require.NoError(t, db.CreateTask(testCtx, first))
		ok, held = slot(mcpflow.NewTaskID(), time.Hour)
		require.False(t, ok)
		require.Equal(t, 2, held)
		ok, _ = slot(first.ID, time.Hour)
		require.True(t, ok, "a stored task's id is granted (its retried submit)")

		// A released slot is free again.
		require.NoError(t, db.ReleaseTaskSlot(testCtx, second))
		require.NoError(t, db.ReleaseTaskSlot(testCtx, second), "releasing twice is harmless")
		third := mcpflow.NewTaskID()
		ok, _ = slot(third, -time.Second) // a slot that has lapsed already
		require.True(t, ok)
		ok, _ = slot(mcpflow.NewTaskID(), time.Hour)
		require.True(t, ok, "the lapsed slot no longer counts")
		ok, held = slot(mcpflow.NewTaskID(), time.Hour)
		require.False(t, ok)
		require.Equal(t, 2, held, "the stored task and the new slot")

		// A task that ended no longer counts.
		first.Status = mcpflow.StatusCompleted
		require.NoError(t, db.UpdateTask(testCtx, first))
		ok, _ = slot(mcpflow.NewTaskID(), time.Hour)
		require.True(t, ok)
	})
}

// TestTaskSlotsRequestHash: a task id reserved again with another request
// hash (an idempotency key used for another request) is refused, before
// and after its row is stored; the row keeps the hash of its slot.
func TestTaskSlotsRequestHash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "th", "alice")
		task := newTask("alice", "th", "r1")
		reserve := func(hash string) mcpflow.SlotGrant {
			t.Helper()
			g, err := db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: task.ID, UserID: "alice", Max: 5, TTL: time.Hour, RequestHash: hash})
			require.NoError(t, err)
			return g
		}
		require.Equal(t, mcpflow.SlotGrant{Granted: true}, reserve("aaa"))
		require.Equal(t, mcpflow.SlotGrant{Granted: true}, reserve("aaa"))
		require.Equal(t, mcpflow.SlotGrant{OtherRequest: true}, reserve("bbb"))
		require.NoError(t, db.CreateTask(testCtx, task))
		require.Equal(t, mcpflow.SlotGrant{Granted: true, Stored: true}, reserve("aaa"))
		require.Equal(t, mcpflow.SlotGrant{OtherRequest: true}, reserve("bbb"))

		// A row stored without a hash (no key, or its slot lapsed) matches.
		plain := newTask("alice", "th", "r2")
		require.NoError(t, db.CreateTask(testCtx, plain))
		g, err := db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: plain.ID, UserID: "alice", Max: 5, TTL: time.Hour, RequestHash: "ccc"})
		require.NoError(t, err)
		require.Equal(t, mcpflow.SlotGrant{Granted: true, Stored: true}, g)

		// Without a cap (Max 0) a slot is always granted.
		for range 3 {
			g, err := db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: mcpflow.NewTaskID(), UserID: "alice", TTL: time.Hour})
			require.NoError(t, err)
			require.True(t, g.Granted)
		}
	})
}

// TestTaskSlotsCountOneSnapshot: a task's row that consumes its slot while
// another submit counts (CreateTask, on another replica, between the
// count's reads) is counted once, as the row or as the slot, never missed
// by both: the count is one statement. PostgreSQL only: on SQLite the
// reservation holds the write lock, so no commit lands in between.
func TestTaskSlotsCountOneSnapshot(t *testing.T) {
	b := setup(t, BackendPostgres)
	other, err := Open(testCtx, b.backend, b.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, other.Close()) })
	createThread(t, b.db, "th", "alice")
	first := newTask("alice", "th", "r1")
	g, err := b.db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: first.ID, UserID: "alice", Max: 2, TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, g.Granted)
	g, err = b.db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: mcpflow.NewTaskID(), UserID: "alice", Max: 2, TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, g.Granted)

	// Right after this store's first count of mcp_tasks, the other replica
	// stores first's row, which consumes its slot.
	var once sync.Once
	var stored error
	require.NoError(t, b.db.gorm.Callback().Query().After("gorm:query").Register("test:store-between", func(tx *gorm.DB) {
		if sql := strings.ToLower(tx.Statement.SQL.String()); strings.Contains(sql, "count(") && strings.Contains(sql, "mcp_tasks") {
			once.Do(func() { stored = other.CreateTask(testCtx, first) })
		}
	}))
	require.NoError(t, b.db.gorm.Callback().Raw().After("gorm:raw").Register("test:store-between-raw", func(tx *gorm.DB) {
		if sql := strings.ToLower(tx.Statement.SQL.String()); strings.Contains(sql, "count(") && strings.Contains(sql, "mcp_tasks") {
			once.Do(func() { stored = other.CreateTask(testCtx, first) })
		}
	}))
	g, err = b.db.ReserveTaskSlot(testCtx, mcpflow.TaskSlot{TaskID: mcpflow.NewTaskID(), UserID: "alice", Max: 2, TTL: time.Hour})
	require.NoError(t, err)
	require.NoError(t, stored)
	require.False(t, g.Granted, "the cap of 2 holds: first's row or slot was counted")
	require.Equal(t, 2, g.Held)
}
