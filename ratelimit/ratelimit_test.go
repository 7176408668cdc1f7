package ratelimit

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memStore is a RateStore in memory: the bucket arithmetic of the
// database's, behind one lock.
type memStore struct {
	mu      sync.Mutex
	tokens  map[string]float64
	at      map[string]time.Time
	used    map[string]int
	calls   atomic.Int64
	failing bool
}

func newMem() *memStore {
	return &memStore{tokens: map[string]float64{}, at: map[string]time.Time{}, used: map[string]int{}}
}

func (m *memStore) TakeTokens(_ context.Context, key string, perSecond float64, burst, want, giveBack int, now time.Time) (int, time.Duration, error) {
	m.calls.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing {
		return 0, 0, context.DeadlineExceeded
	}
	tok, ok := m.tokens[key]
	if !ok {
		tok = float64(burst)
	} else if dt := now.Sub(m.at[key]).Seconds(); dt > 0 {
		tok = math.Min(float64(burst), tok+dt*perSecond)
	}
	tok = math.Min(float64(burst), tok+float64(giveBack))
	n := min(want, int(tok))
	tok -= float64(n)
	m.tokens[key], m.at[key] = tok, now
	if n == 0 && perSecond > 0 {
		return 0, time.Duration((1 - tok) / perSecond * float64(time.Second)), nil
	}
	return n, time.Hour, nil
}

func (m *memStore) TakeQuota(_ context.Context, key string, limit, want, giveBack int, now time.Time) (int, error) {
	m.calls.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key + now.UTC().Format(time.DateOnly)
	m.used[k] = max(0, m.used[k]-giveBack)
	n := min(want, limit-m.used[k])
	m.used[k] += n
	return n, nil
}

// Two replicas and 32 callers never admit more than the bucket gives, and
// ask the store about once per chunk, not per call.
func TestReplicasNeverExceedTheBucket(t *testing.T) {
	st := newMem()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	replicas := []*Limiter{{Store: st, Now: clock}, {Store: st, Now: clock}}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				ok, wait, err := replicas[i%2].Take(context.Background(), "k", Spec{PerSecond: 0.001, Burst: 50})
				if err != nil {
					t.Error(err)
				}
				if ok {
					admitted.Add(1)
				} else if wait < time.Second {
					t.Errorf("retry after %v", wait)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 50 {
		t.Fatalf("admitted %d calls with a burst of 50", admitted.Load())
	}
	if c := st.calls.Load(); c > 50/5+8 {
		t.Fatalf("%d store calls for 50 admitted calls in chunks of 5", c)
	}
}

// A chunk not spent within Hold lapses; the daily quota ends at midnight.
func TestHoldAndQuota(t *testing.T) {
	st := newMem()
	now := time.Date(2026, 12, 5, 23, 59, 0, 0, time.UTC)
	l := &Limiter{Store: st, Now: func() time.Time { return now }, Chunk: 4}
	spec := Spec{Daily: 6}
	for i := range 6 {
		if ok, _, _ := l.Take(context.Background(), "q", spec); !ok {
			t.Fatalf("call %d refused under a quota of 6", i)
		}
	}
	ok, wait, _ := l.Take(context.Background(), "q", spec)
	if ok || wait != time.Minute {
		t.Fatalf("7th call: %v, retry in %v; want refused until midnight (1m)", ok, wait)
	}
	now = now.Add(2 * time.Minute)
	if ok, _, _ := l.Take(context.Background(), "q", spec); !ok {
		t.Fatal("refused on the next day")
	}
	// Took a chunk of 4, spent 1; after Hold the other 3 are not spent
	// but given back with the next take.
	now = now.Add(2 * time.Second)
	before := st.calls.Load()
	if ok, _, _ := l.Take(context.Background(), "q", spec); !ok || st.calls.Load() != before+1 {
		t.Fatalf("a lapsed chunk was spent (store calls %d → %d)", before, st.calls.Load())
	}
	if used := st.used["q"+now.UTC().Format(time.DateOnly)]; used != 5 {
		t.Fatalf("%d uses of the day counted after giving 3 back and taking 4; want 1+4 = 5", used)
	}
	st.failing = true
	if ok, _, err := l.Take(context.Background(), "b", Spec{PerSecond: 1, Burst: 1}); ok || err == nil {
		t.Fatal("a store error admitted the call")
	}
}

// Slow callers get the whole quota: what a chunk did not spend goes back.
func TestSlowCallersGetTheWholeQuota(t *testing.T) {
	st := newMem()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	l := &Limiter{Store: st, Now: func() time.Time { return now }}
	admitted := 0
	for range 15 {
		if ok, _, err := l.Take(context.Background(), "slow", Spec{Daily: 10}); err != nil {
			t.Fatal(err)
		} else if ok {
			admitted++
		}
		now = now.Add(2 * time.Second)
	}
	if admitted != 10 {
		t.Fatalf("%d of a daily quota of 10 admitted to a call every 2 s", admitted)
	}
}
