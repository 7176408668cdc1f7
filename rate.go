package mcpflow

import (
	"context"
	"time"
)

// RateStore keeps the shared state of the rate limits (package
// ratelimit) for every API replica: token buckets and daily counters.
// Replicas take from it in chunks, so a call is not a database round trip.
type RateStore interface {
	// TakeTokens puts back giveBack tokens a replica took and did not
	// spend, then takes up to want tokens from the bucket key, which holds
	// at most burst tokens and refills at perSecond, as of now. It returns
	// how many it took and, when it took none, how long until one is
	// there.
	TakeTokens(ctx context.Context, key string, perSecond float64, burst, want, giveBack int, now time.Time) (int, time.Duration, error)
	// TakeQuota puts back giveBack unspent uses of the day of now, then
	// takes up to want uses of key's quota of that UTC day (at most limit
	// uses a day) and returns how many it took.
	TakeQuota(ctx context.Context, key string, limit, want, giveBack int, now time.Time) (int, error)
}
