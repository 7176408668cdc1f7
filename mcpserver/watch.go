package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow"
)

// Rechecks of the inbox for appends of other processes.
const (
	// inboxRecheck is how often a replica looks for inbox appends made by
	// other processes (its own appends wake waiters at once).
	inboxRecheck = 500 * time.Millisecond
	// recheckLag is how many rechecks back each recheck looks: seqs of
	// different threads may commit out of order; one later than recheckLag
	// × inboxRecheck is found by the waiters' own periodic re-read.
	recheckLag = 8
	// recheckLimit is how many threads one recheck names; beyond it every
	// waiter is woken.
	recheckLimit = 1000
)

// watch wakes this process's waiters (GET streams, tasks/result,
// tasks/cancel) of a thread whose inbox may have grown: at once for this
// process's appends, within inboxRecheck for others' (one query per
// interval, only while someone waits).
type watch struct {
	events mcpflow.EventStore

	mu      sync.Mutex
	threads map[mcpflow.ThreadRef]*threadWatch // the threads waited on
	holders int
	stop    chan struct{} // closes the poll loop
	unsub   func()        // ends the append subscription
	// seen is the highest seq known per thread with events after the floor.
	seen map[mcpflow.ThreadRef]int64
}

// threadWatch is the waiters of one thread.
type threadWatch struct {
	holders int
	changed chan struct{} // closed at the thread's next change
}

func newWatch(events mcpflow.EventStore) *watch {
	return &watch{events: events, threads: map[mcpflow.ThreadRef]*threadWatch{}}
}

// hold registers a waiter of a thread, and starts the poll loop for the
// first waiter of the process; call the returned func when done waiting.
func (w *watch) hold(thread mcpflow.ThreadRef) (release func()) {
	w.mu.Lock()
	tw := w.threads[thread]
	if tw == nil {
		tw = &threadWatch{changed: make(chan struct{})}
		w.threads[thread] = tw
	}
	tw.holders++
	w.holders++
	if w.holders == 1 {
		// Subscribe and read the baseline before anyone waits, so that no
		// append after hold returns goes unseen.
		w.seen = map[mcpflow.ThreadRef]int64{}
		w.unsub = w.events.SubscribeAppends(w.appended)
		floor, err := w.latest()
		w.stop = make(chan struct{})
		go w.loop(w.stop, floor, err == nil)
	}
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if tw.holders--; tw.holders == 0 {
				delete(w.threads, thread)
			}
			if w.holders--; w.holders == 0 {
				close(w.stop)
				w.unsub()
			}
		})
	}
}

// next returns a channel closed at the held thread's next change; take it
// before reading what you wait for.
func (w *watch) next(thread mcpflow.ThreadRef) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tw := w.threads[thread]; tw != nil {
		return tw.changed
	}
	return nil
}

// fireLocked wakes the waiters of a thread (w.mu held).
func (w *watch) fireLocked(thread mcpflow.ThreadRef) {
	if tw := w.threads[thread]; tw != nil {
		close(tw.changed)
		tw.changed = make(chan struct{})
	}
}

// appended is the store's callback for an append of this process.
func (w *watch) appended(thread mcpflow.ThreadRef, seq int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen != nil && seq > w.seen[thread] {
		w.seen[thread] = seq // the next recheck need not wake it again
	}
	w.fireLocked(thread)
}

func (w *watch) loop(stop chan struct{}, floor int64, known bool) {
	tick := time.NewTicker(inboxRecheck)
	defer tick.Stop()
	top := floor
	var past []int64 // top at each recheck, oldest first
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !known {
			// The baseline could not be read: without it every thread
			// with events would look changed.
			if seq, err := w.latest(); err == nil {
				floor, top, known = seq, seq, true
			}
			continue
		}
		got, err := w.recheck(floor)
		if err != nil {
			continue
		}
		w.mu.Lock()
		select {
		case <-stop: // released meanwhile; seen belongs to a newer loop
			w.mu.Unlock()
			return
		default:
		}
		for thread, seq := range got {
			top = max(top, seq)
			if seq > w.seen[thread] {
				w.seen[thread] = seq
				w.fireLocked(thread)
			}
		}
		if len(got) >= recheckLimit {
			for thread := range w.threads {
				w.fireLocked(thread)
			}
		}
		if past = append(past, top); len(past) > recheckLag {
			floor, past = past[0], past[1:]
		}
		for thread, seq := range w.seen {
			if seq <= floor {
				delete(w.seen, thread) // a new event of it will be above the floor
			}
		}
		w.mu.Unlock()
	}
}

func (w *watch) latest() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxRecheck*4)
	defer cancel()
	return w.events.LatestEventSeq(ctx, mcpflow.ThreadRef{})
}

func (w *watch) recheck(after int64) (map[mcpflow.ThreadRef]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxRecheck*4)
	defer cancel()
	return w.events.ThreadsWithEventsAfter(ctx, after, recheckLimit)
}
