// Package ratelimit holds the rate limits and daily quotas of tool calls
// for every API replica at once, without a database round trip per call.
//
// The state is shared (mcpflow.RateStore: a token bucket per limit key and
// a counter per key and UTC day, in the database); a replica takes tokens
// from it in chunks (Chunk, default 5) and spends them locally for at most
// Hold (default 1 s); what it has not spent by then goes back with its next
// take of that key. So the calls admitted by all replicas together never
// exceed what the bucket gave out (burst + rate × time) or the day's
// quota: the bound over the limit is zero. What the chunks cost is the
// other way: a replica can hold up to Chunk - 1 tokens that another one is
// refused, until its own next call of that key (a daily quota's uses taken
// before midnight stay with that day).
//
// The limits themselves (which calls, how many) are the "limits" of the
// policies block (package policy); this package only holds the counts.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow"
)

// Spec is one limit for one key: a token bucket (PerSecond, Burst; Burst 0
// means no bucket) and a daily quota (Daily 0: none).
type Spec struct {
	PerSecond float64
	Burst     int
	Daily     int
}

// Limiter spends the chunks of one replica.
type Limiter struct {
	Store mcpflow.RateStore
	Chunk int           // tokens taken at a time (default 5)
	Hold  time.Duration // how long a taken chunk may be spent (default 1 s)
	Now   func() time.Time

	mu   sync.Mutex
	held map[string]*chunk
}

type chunk struct {
	mu    sync.Mutex
	left  int       // unspent tokens of the last chunk
	taken time.Time // when it was taken
	until time.Time // it may be spent until then
	wait  time.Time // the store had none: none until then
}

// Take spends one call of key under spec. It answers false with how long
// to wait when the limit is reached; an error of the store refuses the call.
func (l *Limiter) Take(ctx context.Context, key string, spec Spec) (bool, time.Duration, error) {
	if spec.Burst > 0 {
		ok, wait, err := l.take(ctx, "b:"+key, func(want, giveBack int, _ time.Time, now time.Time) (int, time.Duration, error) {
			return l.Store.TakeTokens(ctx, key, spec.PerSecond, spec.Burst, min(want, spec.Burst), giveBack, now)
		})
		if !ok || err != nil {
			return ok, wait, err
		}
	}
	if spec.Daily > 0 {
		return l.take(ctx, "q:"+key, func(want, giveBack int, takenAt, now time.Time) (int, time.Duration, error) {
			if !sameUTCDay(takenAt, now) {
				giveBack = 0 // the uses of an earlier day are gone with it
			}
			n, err := l.Store.TakeQuota(ctx, key, spec.Daily, min(want, spec.Daily), giveBack, now)
			y, m, d := now.UTC().Date()
			return n, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now), err
		})
	}
	return true, 0, nil
}

func (l *Limiter) take(ctx context.Context, key string, refill func(want, giveBack int, takenAt, now time.Time) (int, time.Duration, error)) (bool, time.Duration, error) {
	c := l.chunk(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := l.now()
	if c.left > 0 && now.Before(c.until) {
		c.left--
		return true, 0, nil
	}
	if now.Before(c.wait) {
		return false, c.wait.Sub(now), nil
	}
	// A lapsed chunk's unspent tokens go back with the next take.
	n, wait, err := refill(l.chunkSize(), c.left, c.taken, now)
	if err != nil {
		return false, 0, err
	}
	c.left, c.taken = 0, now
	if n == 0 {
		// Ask the store again only when a token can be there (at most a
		// Hold from now, so another replica's unspent chunk is not waited
		// for longer than it could hold it).
		c.left, c.wait = 0, now.Add(min(wait, l.hold()))
		return false, max(wait, time.Second), nil
	}
	c.left, c.until = n-1, now.Add(l.hold())
	return true, 0, nil
}

func sameUTCDay(a, b time.Time) bool {
	ya, ma, da := a.UTC().Date()
	yb, mb, db := b.UTC().Date()
	return ya == yb && ma == mb && da == db
}

func (l *Limiter) chunk(key string) *chunk {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]*chunk{}
	}
	c := l.held[key]
	if c == nil {
		if len(l.held) >= 100_000 { // lapsed chunks of idle keys
			now := l.now()
			for k, old := range l.held {
				if old.mu.TryLock() {
					if !now.Before(old.until) && !now.Before(old.wait) {
						delete(l.held, k)
					}
					old.mu.Unlock()
				}
			}
		}
		c = &chunk{}
		l.held[key] = c
	}
	return c
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Limiter) chunkSize() int {
	if l.Chunk > 0 {
		return l.Chunk
	}
	return 5
}

func (l *Limiter) hold() time.Duration {
	if l.Hold > 0 {
		return l.Hold
	}
	return time.Second
}
