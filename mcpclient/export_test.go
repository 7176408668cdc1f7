package mcpclient

import "time"

// WithClock makes o's runtime read now as the clock of its configuration's
// freshness check, for tests that move time on instead of sleeping.
func WithClock(now func() time.Time) func(*Options) {
	return func(o *Options) { o.now = now }
}
