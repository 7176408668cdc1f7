package audit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow"
)

type fakeStore struct {
	mu      sync.Mutex
	got     []mcpflow.AuditRecord
	fail    int // refuse this many inserts first
	block   chan struct{}
	batches int
	cutoffs []time.Time // of DeleteAuditBefore
}

func (f *fakeStore) InsertAudit(_ context.Context, rs []mcpflow.AuditRecord) error {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	if f.fail > 0 {
		f.fail--
		return errors.New("database down")
	}
	f.got = append(f.got, rs...)
	return nil
}
func (f *fakeStore) ListAudit(context.Context, mcpflow.AuditFilter) ([]mcpflow.AuditRecord, error) {
	return nil, nil
}
func (f *fakeStore) DeleteAuditBefore(_ context.Context, t time.Time) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutoffs = append(f.cutoffs, t)
	return 1, nil
}

func (f *fakeStore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

// Close writes every queued record, in order, also after refused batches.
func TestCloseWritesEverything(t *testing.T) {
	st := &fakeStore{fail: 2}
	l := New(Options{Store: st, FlushEvery: time.Hour, BatchSize: 7})
	for i := range 100 {
		l.Record(mcpflow.AuditRecord{ID: int64(i), Kind: mcpflow.AuditCall})
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.count() != 100 {
		t.Fatalf("%d records written, want 100", st.count())
	}
	for i, r := range st.got {
		if r.ID != int64(i) || r.Time.IsZero() {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

// A full queue drops records; the queue never blocks the caller.
func TestFullQueueDrops(t *testing.T) {
	st := &fakeStore{block: make(chan struct{})}
	l := New(Options{Store: st, QueueSize: 10, BatchSize: 1, FlushEvery: time.Millisecond})
	done := make(chan struct{})
	go func() {
		for range 100 {
			l.Record(mcpflow.AuditRecord{Kind: mcpflow.AuditCall})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked on a full queue")
	}
	close(st.block)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One batch was taken by the writer, 10 waited in the queue.
	if n := st.count(); n < 10 || n > 12 {
		t.Fatalf("%d records written of 100 with a queue of 10", n)
	}
}

func TestClientName(t *testing.T) {
	for in, want := range map[string]string{`{"name": "claude", "version": "1.2"}`: "claude/1.2", `{"name": "x"}`: "x", `{}`: "", `[1]`: "", ``: ""} {
		if got := ClientName([]byte(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	// A clientInfo over 512 bytes is named, not kept in the cache.
	big := `{"name": "big", "version": "1", "pad": "` + strings.Repeat("x", 600) + `"}`
	if got := ClientName([]byte(big)); got != "big/1" {
		t.Errorf("big: %q", got)
	}
	clientNames.Lock()
	_, kept := clientNames.m[big]
	clientNames.Unlock()
	if kept {
		t.Error("a clientInfo over 512 bytes was cached")
	}
}

// Retention is applied at start and then every SweepEvery, deleting what
// is older than Retention; without Retention nothing is deleted.
func TestRetentionSweeps(t *testing.T) {
	st := &fakeStore{}
	l := New(Options{Store: st, Retention: 90 * 24 * time.Hour, SweepEvery: 20 * time.Millisecond})
	start := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		n := len(st.cutoffs)
		st.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sweeps in 10 s with SweepEvery 20 ms", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range st.cutoffs {
		if age := time.Since(c); age < 90*24*time.Hour || c.Before(start.Add(-90*24*time.Hour-time.Second)) {
			t.Fatalf("cutoff %v is not 90 days before the sweep (age %v)", c, age)
		}
	}

	keep := &fakeStore{}
	l = New(Options{Store: keep, SweepEvery: time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(keep.cutoffs) != 0 {
		t.Fatalf("no retention, yet %d sweeps", len(keep.cutoffs))
	}
}

// take hands out the queue oldest first, keeps what it leaves in order,
// and gives back the memory of a burst once the queue is empty (a small
// queue's is kept for the next records).
func TestTakeOrderAndMemory(t *testing.T) {
	l := &Log{o: Options{QueueSize: 1000, BatchSize: 10}}
	for i := range 95 {
		l.queue = append(l.queue, mcpflow.AuditRecord{ID: int64(i)})
	}
	var next int64
	for l.queued() > 0 {
		batch := l.take(nil, 10)
		if len(batch) != min(10, 95-int(next)) {
			t.Fatalf("a batch of %d at %d", len(batch), next)
		}
		for _, r := range batch {
			if r.ID != next {
				t.Fatalf("record %d taken as %d", r.ID, next)
			}
			next++
		}
	}
	if next != 95 || l.queue != nil {
		t.Fatalf("%d taken; the emptied queue keeps %d of capacity", next, cap(l.queue))
	}
	l.queue = append(l.queue, mcpflow.AuditRecord{ID: 1}, mcpflow.AuditRecord{ID: 2})
	if b := l.take(nil, 10); len(b) != 2 || l.queue == nil {
		t.Fatalf("a small queue: %d taken, its memory dropped %v", len(b), l.queue == nil)
	}
}
