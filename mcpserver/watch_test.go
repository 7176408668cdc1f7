package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
	"github.com/mcpflow/mcpflow/store"
)

// uth names user u's thread id.
func uth(id string) mcpflow.ThreadRef { return mcpflow.ThreadRef{UserID: "u", ThreadID: id} }

// woken waits until ch is closed.
func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no wake-up for %s", what)
	}
}

// asleep checks that ch is not closed (yet).
func asleep(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s was woken", what)
	default:
	}
}

// The watch wakes the waiters of the thread that got an event, and only
// them: for appends of this process at once (before AppendEvent returns),
// and for appends of another process (another store on the same database)
// at its next recheck, which wakes every thread it found in one pass.
func TestWatchWakesOnlyTheThreadThatChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	ctx := context.Background()
	db, err := store.Open(ctx, store.BackendSQLite, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	other, err := store.Open(ctx, store.BackendSQLite, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	for _, th := range []string{"a", "b"} {
		_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: th, UserID: "u"})
		require.NoError(t, err)
	}

	w := newWatch(db)
	releaseA := w.hold(uth("a"))
	releaseA2 := w.hold(uth("a")) // two waiters of one thread
	releaseB := w.hold(uth("b"))
	version := 0
	appendTo := func(s *store.DB, thread string) {
		version++
		_, err := s.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: "u", ThreadID: thread, TaskID: "t-" + thread, EventVersion: version,
			Status: mcpflow.StatusCompleted, Payload: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}

	// This process: the wake-up is done when AppendEvent returns.
	a, b := w.next(uth("a")), w.next(uth("b"))
	appendTo(db, "b")
	select {
	case <-b:
	default:
		t.Fatal("an append of this process did not wake its thread's waiters before AppendEvent returned")
	}
	asleep(t, a, "thread a, by an append to thread b")
	// Thread ids are per user: another user's thread a is another thread.
	_, _, err = db.CreateThread(ctx, &mcpflow.Thread{ID: "a", UserID: "v"})
	require.NoError(t, err)
	version++
	_, err = db.AppendEvent(ctx, &mcpflow.ThreadEvent{UserID: "v", ThreadID: "a", TaskID: "t-va", EventVersion: version,
		Status: mcpflow.StatusCompleted, Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	asleep(t, a, "u's thread a, by an append to v's thread a")
	appendTo(db, "a")
	woken(t, a, "thread a's own append")

	// Another process: found by the recheck.
	a, b = w.next(uth("a")), w.next(uth("b"))
	appendTo(other, "b")
	woken(t, b, "an append to b by another process")
	asleep(t, a, "thread a, by another process's append to thread b")
	appendTo(other, "a")
	woken(t, a, "an append to a by another process")

	// A thread nobody waits on wakes nobody; releasing is idempotent and
	// the last release stops the loop.
	releaseA()
	releaseA()
	a = w.next(uth("a"))
	appendTo(db, "a")
	woken(t, a, "the remaining waiter of a")
	releaseA2()
	releaseB()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Zero(t, w.holders)
	require.Empty(t, w.threads)
}

// fakeInbox is an inbox whose commits the test orders: ThreadsWithEventsAfter
// answers from the events "committed" so far, so a seq can commit after a
// higher one of another thread, as on PostgreSQL.
type fakeInbox struct {
	nopEvents
	mu        sync.Mutex
	committed map[mcpflow.ThreadRef][]int64
	subs      int
}

func (f *fakeInbox) commit(thread string, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed[uth(thread)] = append(f.committed[uth(thread)], seq)
}

func (f *fakeInbox) LatestEventSeq(context.Context, mcpflow.ThreadRef) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var top int64
	for _, seqs := range f.committed {
		for _, s := range seqs {
			top = max(top, s)
		}
	}
	return top, nil
}

func (f *fakeInbox) ThreadsWithEventsAfter(_ context.Context, after int64, limit int) (map[mcpflow.ThreadRef]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[mcpflow.ThreadRef]int64{}
	for th, seqs := range f.committed {
		for _, s := range seqs {
			if s > after && s > out[th] && (len(out) < limit || out[th] > 0) {
				out[th] = s
			}
		}
	}
	return out, nil
}

func (f *fakeInbox) SubscribeAppends(func(mcpflow.ThreadRef, int64)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs--
	}
}

// An event of another process whose seq is lower than one already seen
// (it committed later) still wakes its thread's waiters.
func TestWatchSeesALateCommit(t *testing.T) {
	t.Parallel()
	f := &fakeInbox{committed: map[mcpflow.ThreadRef][]int64{uth("old"): {5}}}
	w := newWatch(f)
	releaseA, releaseB := w.hold(uth("a")), w.hold(uth("b"))
	a, b := w.next(uth("a")), w.next(uth("b"))
	f.commit("b", 11)
	woken(t, b, "b's seq 11")
	asleep(t, a, "a, by b's event")
	f.commit("a", 10) // taken before 11, committed after it
	woken(t, a, "a's seq 10, committed after b's 11")
	releaseA()
	releaseB()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Zero(t, f.subs, "the last release ends the subscription")
}

// When more threads got events than one recheck names, every waiter is
// woken (and reads its own thread).
func TestWatchWakesAllBeyondTheRecheckLimit(t *testing.T) {
	t.Parallel()
	f := &fakeInbox{committed: map[mcpflow.ThreadRef][]int64{}}
	w := newWatch(f)
	release := w.hold(uth("a"))
	defer release()
	a := w.next(uth("a"))
	for i := range recheckLimit + 1 {
		f.commit(fmt.Sprintf("t%d", i), int64(i+1))
	}
	woken(t, a, "a waiter, when more threads changed than a recheck names")
}
