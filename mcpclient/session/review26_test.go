package session

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview26SlowURIBlocksTheTogetherRule: review 24's server (at most
// two resources per stream) made realistic: what is slow is test://m
// itself (its upstream takes subsAckWait+2 s to subscribe it), so any
// stream naming m, m alone included, is answered only then. test://a and
// test://z are subscribed and acknowledged; Subscribe(m) runs out while
// [a m z] is open and succeeds (warning); [a m z] is then refused. The
// probe of m alone goes unanswered within subsAckWait, so
// refusedTogetherLocked's "each accepted alone" (len(accepted) ==
// len(uris)) never held: nothing was dropped, and the listener asked for
// [a m z] at every backoff, refused each time. a and z, working
// subscriptions, never had a stream again, as in review 24, which
// 8e4cb2e/a2b436c fixed only for a server fast to answer m alone.
// Not new in a2b436c: the test fails the same way at 8e4cb2e.
func TestReview26SlowURIBlocksTheTogetherRule(t *testing.T) {
	slowTogether(t, "test://m")
}

// slowTogether runs review 26's scenario with slow (test://a, test://m
// or test://z) the URI whose upstream is slow: a and z subscribed and
// acknowledged, m added, [a m z] refused as more than two resources, and
// a stream naming a and z acknowledged again within 60 s.
func slowTogether(t *testing.T, slow string) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	const a, m, z = "test://a", "test://m", "test://z"
	srv := newReview3Server(t)
	var together, alone atomic.Int32 // [a m z] refused; slow asked alone
	srv.refusal = func(rctx context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, slow) {
			if len(f.ResourceSubscriptions) == 1 {
				alone.Add(1)
			}
			select { // slow's upstream is slow
			case <-time.After(subsAckWait + 2*time.Second):
			case <-rctx.Done():
				return nil
			}
		}
		e := capAt2(rctx, f)
		if e != nil {
			together.Add(1)
		}
		return e
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	for _, uri := range []string{a, z} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 30*time.Second, a, z), "[a z] is acknowledged")
	alone.Store(0) // (the streams of Subscribe(a) and Subscribe(z))
	um, err := s.Subscribe(ctx, m, func() {})
	require.NoError(t, err, "Subscribe(%s) (its wait runs out while [a m z] is open: success)", m)
	defer um()
	since := srv.count()
	require.True(t, srv.waitLiveAckedNamingAll(since, 60*time.Second, a, z),
		"60 s after Subscribe(%s) returned, no acknowledged stream names %s and %s, subscribed before: the server "+
			"refused [a m z] %d times as more than two resources, takes [a z], refused nothing alone, and was asked "+
			"about %s alone %d times (slow, never refusing it)", m, a, z, together.Load(), slow, alone.Load())
}
