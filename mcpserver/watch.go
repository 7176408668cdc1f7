package mcpserver

import (
	"context"
	"sync"
	"time"
)

// inboxRecheck is how often a replica looks for inbox appends made by other
// processes (its own appends wake waiters at once).
const inboxRecheck = 500 * time.Millisecond

// watch tells the waiters of this process (GET streams, tasks/result,
// tasks/cancel) when the thread inbox may have grown: at once for appends
// of this process, within inboxRecheck for those of other processes (one
// query of the inbox's highest seq per interval, whatever the number of
// waiters). It polls only while someone waits.
type watch struct {
	latest   func(ctx context.Context) (int64, error)
	appended func() <-chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed at the next change
	holders int
	stop    chan struct{} // closes the poll loop
}

func newWatch(latest func(ctx context.Context) (int64, error), appended func() <-chan struct{}) *watch {
	return &watch{latest: latest, appended: appended, changed: make(chan struct{})}
}

// hold registers a waiter and starts the poll loop for the first one; call
// the returned func when done waiting.
func (w *watch) hold() (release func()) {
	w.mu.Lock()
	w.holders++
	if w.holders == 1 {
		// Subscribe and read the baseline before anyone waits, so that no
		// append after hold returns goes unseen.
		appended := w.appended()
		last, _ := w.read()
		w.stop = make(chan struct{})
		go w.loop(w.stop, appended, last)
	}
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.holders--; w.holders == 0 {
				close(w.stop)
			}
		})
	}
}

// next returns a channel closed at the next change. Take it before reading
// what you wait for, so that no change is missed.
func (w *watch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *watch) loop(stop chan struct{}, appended <-chan struct{}, last int64) {
	tick := time.NewTicker(inboxRecheck)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-appended:
			// An append between the close and this new subscription is
			// caught by the next tick (the seq differs from last).
			appended = w.appended()
			w.fire()
		case <-tick.C:
			if seq, err := w.read(); err == nil && seq != last {
				last = seq
				w.fire()
			}
		}
	}
}

func (w *watch) read() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxRecheck*4)
	defer cancel()
	return w.latest(ctx)
}
