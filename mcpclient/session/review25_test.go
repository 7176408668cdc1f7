package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestReview25SlowTransientRefusalDropsAWorkingSubscription: the server
// takes any number of resources per stream and acknowledges at once, but
// once, for the stream naming test://a, test://m and test://z, its own
// upstream hangs and it refuses the stream after subsAckWait with an
// -32603 (a timeout: transient). test://a and test://z are subscribed and
// acknowledged; Subscribe(test://m)'s wait runs out while [a m z] is open
// and unanswered, so it succeeds (with the warning). The refusal then
// comes; the probes each accept their URI alone (the upstream is back), so
// refusedTogetherLocked sees "refused together, each accepted alone, the
// last acknowledged stream named a and z but not m" and drops m, without
// asking again: the listener's next [a m z] would have been acknowledged
// (as it was before 8e4cb2e, which kept all three and retried after its
// backoff). m's caller holds a subscription that no stream carries and
// that no update reaches; only a warning in the log says so.
func TestReview25SlowTransientRefusalDropsAWorkingSubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	const a, m, z = "test://a", "test://m", "test://z"
	srv := newReview3Server(t)
	var mu sync.Mutex
	refusedOnce := false
	srv.refusal = func(rctx context.Context, f listenFilter2) map[string]any {
		if len(f.ResourceSubscriptions) < 3 {
			return nil
		}
		mu.Lock()
		first := !refusedOnce
		refusedOnce = true
		mu.Unlock()
		if !first {
			return nil // the upstream is back: taken
		}
		select {
		case <-time.After(subsAckWait + time.Second):
		case <-rctx.Done():
		}
		return map[string]any{"code": mcp.INTERNAL_ERROR, "message": "upstream timed out subscribing; try again"}
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	for _, uri := range []string{a, z} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	um, err := s.Subscribe(ctx, m, func() {})
	require.NoError(t, err, "Subscribe(%s) (its wait runs out while the stream is open: success)", m)
	defer um()
	since := srv.count()
	ok := srv.waitLiveAckedNamingAll(since, 30*time.Second, a, m, z)
	s.subs.mu.Lock()
	held := len(s.subs.byURI[m]) > 0
	s.subs.mu.Unlock()
	require.True(t, ok, "30 s after Subscribe(%s) succeeded, no acknowledged stream names %s, %s and %s, though the "+
		"server refused them together once, transiently, and takes all three (still subscribed in the session: %v)",
		m, a, m, z, held)
}
