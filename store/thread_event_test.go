package store

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

func event(thread, task string, version int, status mcpflow.Status) *mcpflow.ThreadEvent {
	payload := fmt.Sprintf(`{"task_id":%q,"status":%q,"result":{"n":%d},"text":"<ü>"}`, task, status, version)
	return &mcpflow.ThreadEvent{UserID: "alice", ThreadID: thread, TaskID: task, EventVersion: version, Status: status, Payload: json.RawMessage(payload)}
}

// alice names a thread of alice's, the user of event's events.
func alice(thread string) mcpflow.ThreadRef {
	return mcpflow.ThreadRef{UserID: "alice", ThreadID: thread}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-1", "alice")
		createThread(t, db, "thread-2", "alice")

		appended := []*mcpflow.ThreadEvent{
			event("thread-1", "task-a", 1, mcpflow.StatusInputRequired),
			event("thread-1", "task-b", 1, mcpflow.StatusCompleted),
			event("thread-1", "task-a", 2, mcpflow.StatusCompleted),
		}
		appended[0].CreatedAt = at(0)
		var last int64
		for _, e := range appended {
			seq, err := db.AppendEvent(testCtx, e)
			require.NoError(t, err)
			require.Greater(t, seq, last)
			require.Equal(t, seq, e.Seq)
			last = seq
		}
		require.Equal(t, normalized(at(0)), appended[0].CreatedAt)
		_, err := db.AppendEvent(testCtx, event("thread-2", "task-c", 1, mcpflow.StatusFailed))
		require.NoError(t, err)

		requireEvents := func(want []*mcpflow.ThreadEvent, got []*mcpflow.ThreadEvent) {
			t.Helper()
			require.Len(t, got, len(want))
			for i := range want {
				require.JSONEq(t, string(want[i].Payload), string(got[i].Payload))
				w, g := *want[i], *got[i]
				w.Payload, g.Payload = nil, nil
				require.Equal(t, w, g)
			}
		}

		all, err := db.ListEvents(testCtx, alice("thread-1"), 0, 0)
		require.NoError(t, err)
		requireEvents(appended, all)

		// after is an exclusive cursor; limit caps the page.
		rest, err := db.ListEvents(testCtx, alice("thread-1"), appended[0].Seq, 0)
		require.NoError(t, err)
		requireEvents(appended[1:], rest)
		page, err := db.ListEvents(testCtx, alice("thread-1"), 0, 2)
		require.NoError(t, err)
		requireEvents(appended[:2], page)
		one, err := db.ListEvents(testCtx, alice("thread-1"), 0, -1)
		require.NoError(t, err)
		requireEvents(appended[:1], one)
		none, err := db.ListEvents(testCtx, alice("thread-1"), last, 10)
		require.NoError(t, err)
		require.Empty(t, none)
		unknown, err := db.ListEvents(testCtx, alice("no-such-thread"), 0, 10)
		require.NoError(t, err)
		require.Empty(t, unknown)

		// Appending the same version again returns the first seq and adds
		// nothing, even with a different payload.
		dup := event("thread-1", "task-a", 1, mcpflow.StatusWorking)
		seq, err := db.AppendEvent(testCtx, dup)
		require.NoError(t, err)
		require.Equal(t, appended[0].Seq, seq)
		require.Equal(t, appended[0].Seq, dup.Seq)
		all, err = db.ListEvents(testCtx, alice("thread-1"), 0, 100)
		require.NoError(t, err)
		requireEvents(appended, all)

		// Bad input.
		bad := event("thread-1", "task-z", 1, mcpflow.StatusCompleted)
		bad.Payload = json.RawMessage(`{"unterminated"`)
		_, err = db.AppendEvent(testCtx, bad)
		requireCode(t, mcpflow.EInvalid, err)

		// Missing and deleted threads.
		_, err = db.AppendEvent(testCtx, event("no-such-thread", "task-z", 1, mcpflow.StatusCompleted))
		requireCode(t, mcpflow.ENotFound, err)
		require.NoError(t, db.DeleteThread(testCtx, "alice", "thread-1", at(time.Hour)))
		_, err = db.AppendEvent(testCtx, event("thread-1", "task-a", 3, mcpflow.StatusCompleted))
		requireCode(t, mcpflow.EGone, err)
		// The inbox of a deleted thread still reads (the API answers 410 first).
		all, err = db.ListEvents(testCtx, alice("thread-1"), 0, 100)
		require.NoError(t, err)
		requireEvents(appended, all)
	})
}

// Twenty workers write at once: threads, tasks, updates and events. On
// SQLite this must never surface SQLITE_BUSY ("database is locked"), and
// racing appends of one event version must yield one row.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "shared", "alice")
		const workers, rounds = 20, 10
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds*10)
		sharedSeqs := make([][]int64, workers)
		for w := range workers {
			wg.Go(func() {
				fail := func(err error) bool {
					if err != nil {
						errs <- fmt.Errorf("worker %d: %w", w, err)
						return true
					}
					return false
				}
				thread := fmt.Sprintf("thread-%d", w)
				if _, _, err := db.CreateThread(testCtx, &mcpflow.Thread{ID: thread, UserID: "alice"}); fail(err) {
					return
				}
				task := newTask("alice", thread, fmt.Sprintf("remote-%d", w))
				if fail(db.CreateTask(testCtx, task)) {
					return
				}
				for r := range rounds {
					task.Status = mcpflow.StatusWorking
					task.PollAttemptCount = r + 1
					if fail(db.UpdateTask(testCtx, task)) {
						return
					}
					if _, err := db.AppendEvent(testCtx, event(thread, task.ID, r+1, mcpflow.StatusWorking)); fail(err) {
						return
					}
					// Everybody races to append the same events to the shared thread.
					seq, err := db.AppendEvent(testCtx, event("shared", "shared-task", r+1, mcpflow.StatusWorking))
					if fail(err) {
						return
					}
					sharedSeqs[w] = append(sharedSeqs[w], seq)
					if _, err := db.ListTasks(testCtx, mcpflow.TaskFilter{UserID: "alice", ThreadID: thread}); fail(err) {
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		t.Logf("%d workers × %d rounds took %v", workers, rounds, time.Since(start))

		shared, err := db.ListEvents(testCtx, alice("shared"), 0, 100)
		require.NoError(t, err)
		require.Len(t, shared, rounds)
		for w := range workers {
			for r, seq := range sharedSeqs[w] {
				require.Equal(t, shared[r].Seq, seq)
			}
		}
		for w := range workers {
			events, err := db.ListEvents(testCtx, alice(fmt.Sprintf("thread-%d", w)), 0, 100)
			require.NoError(t, err)
			require.Len(t, events, rounds)
		}
	})
}

func TestGetEventAndAppendSignal(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "thread-g", "alice")
		_, err := db.GetEvent(testCtx, "task-g", 1)
		require.Equal(t, mcpflow.ENotFound, mcpflow.ErrorCode(err))

		var mu sync.Mutex
		var seen []string
		woken := make(chan struct{}, 1)
		unsubscribe := db.SubscribeAppends(func(thread mcpflow.ThreadRef, _ int64) {
			mu.Lock()
			seen = append(seen, thread.UserID+"/"+thread.ThreadID)
			mu.Unlock()
			select {
			case woken <- struct{}{}:
			default:
			}
		})
		defer unsubscribe()
		e := event("thread-g", "task-g", 1, mcpflow.StatusCompleted)
		_, err = db.AppendEvent(testCtx, e)
		require.NoError(t, err)
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatal("an append was not signalled")
		}
		mu.Lock()
		require.Equal(t, []string{"alice/thread-g"}, seen)
		mu.Unlock()

		got, err := db.GetEvent(testCtx, "task-g", 1)
		require.NoError(t, err)
		require.Equal(t, e.Seq, got.Seq)
		require.Equal(t, "thread-g", got.ThreadID)
		require.JSONEq(t, string(e.Payload), string(got.Payload))
	})
}

// ThreadsWithEventsAfter names the threads that got events after a seq,
// each with its highest seq, in one query.
func TestThreadsWithEventsAfter(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		for _, th := range []string{"ta", "tb", "tc"} {
			createThread(t, db, th, "alice")
		}
		got, err := db.ThreadsWithEventsAfter(testCtx, 0, 100)
		require.NoError(t, err)
		require.Empty(t, got)
		a1, err := db.AppendEvent(testCtx, event("ta", "t1", 1, mcpflow.StatusCompleted))
		require.NoError(t, err)
		b1, err := db.AppendEvent(testCtx, event("tb", "t2", 1, mcpflow.StatusInputRequired))
		require.NoError(t, err)
		b2, err := db.AppendEvent(testCtx, event("tb", "t2", 2, mcpflow.StatusCompleted))
		require.NoError(t, err)
		c1, err := db.AppendEvent(testCtx, event("tc", "t3", 1, mcpflow.StatusFailed))
		require.NoError(t, err)

		got, err = db.ThreadsWithEventsAfter(testCtx, 0, 100)
		require.NoError(t, err)
		require.Equal(t, map[mcpflow.ThreadRef]int64{alice("ta"): a1, alice("tb"): b2, alice("tc"): c1}, got)
		got, err = db.ThreadsWithEventsAfter(testCtx, b1, 100)
		require.NoError(t, err)
		require.Equal(t, map[mcpflow.ThreadRef]int64{alice("tb"): b2, alice("tc"): c1}, got, "only events after the seq count")
		got, err = db.ThreadsWithEventsAfter(testCtx, c1, 100)
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = db.ThreadsWithEventsAfter(testCtx, 0, 2)
		require.NoError(t, err)
		require.Len(t, got, 2, "at most limit threads")
	})
}

// SubscribeAppends tells each subscriber the thread and seq of every append
// of this process, before AppendEvent returns, until it unsubscribes.
func TestSubscribeAppends(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, db *DB) {
		createThread(t, db, "ta", "alice")
		createThread(t, db, "tb", "alice")
		type seen struct {
			thread mcpflow.ThreadRef
			seq    int64
		}
		var mu sync.Mutex
		var got1, got2 []seen
		unsub1 := db.SubscribeAppends(func(th mcpflow.ThreadRef, seq int64) { mu.Lock(); got1 = append(got1, seen{th, seq}); mu.Unlock() })
		unsub2 := db.SubscribeAppends(func(th mcpflow.ThreadRef, seq int64) { mu.Lock(); got2 = append(got2, seen{th, seq}); mu.Unlock() })
		a, err := db.AppendEvent(testCtx, event("ta", "t1", 1, mcpflow.StatusCompleted))
		require.NoError(t, err)
		unsub2()
		b, err := db.AppendEvent(testCtx, event("tb", "t2", 1, mcpflow.StatusCompleted))
		require.NoError(t, err)
		again, err := db.AppendEvent(testCtx, event("tb", "t2", 1, mcpflow.StatusCompleted))
		require.NoError(t, err)
		require.Equal(t, b, again)
		_, err = db.AppendEvent(testCtx, event("missing", "t3", 1, mcpflow.StatusCompleted))
		requireCode(t, mcpflow.ENotFound, err)
		unsub1()
		unsub1() // idempotent
		_, err = db.AppendEvent(testCtx, event("ta", "t1", 2, mcpflow.StatusCompleted))
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []seen{{alice("ta"), a}, {alice("tb"), b}, {alice("tb"), b}}, got1, "a failed append is not signalled; an idempotent repeat is")
		require.Equal(t, []seen{{alice("ta"), a}}, got2)
	})
}
