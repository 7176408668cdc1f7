package audit

import (
	"context"
	"errors"
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
func (f *fakeStore) DeleteAuditBefore(context.Context, time.Time) (int64, error) { return 0, nil }

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
}
