package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// capAt2 refuses, as mcp-go's server does, a stream naming more than two
// resources with -32602 naming the first URI past the cap.
func capAt2(_ context.Context, f listenFilter2) map[string]any {
	if len(f.ResourceSubscriptions) > 2 {
		return map[string]any{"code": mcp.INVALID_PARAMS,
			"message": fmt.Sprintf("subscribing to %q: at most 2 resources per stream", f.ResourceSubscriptions[2])}
	}
	return nil
}

// TestReview24SlowTogetherRefusalLeavesEveryoneWithoutAStream: as in
// review 23 the server takes at most two resources per stream (-32602
// naming the URI past the cap), but it answers a stream naming three only
// after subsAckWait (an upstream that subscribes at its own upstream
// before it answers). test://a and test://z are subscribed and
// acknowledged; Subscribe(test://m)'s wait runs out while [a m z] is open
// and unanswered, so it succeeds with a warning (ranOutLocked). The
// refusal then comes with nobody waiting: each URI is accepted alone
// (!once), so f3576df's rule (fail the waiting URI, ask for the others
// without it) does not apply, nothing is dropped, and the listener asks
// for [a m z] again at each backoff, refused each time. a and z, other
// callers' working subscriptions, never have a stream again (their updates
// are lost silently), and m's caller holds a subscription no stream ever
// carried. Had the refusal come within subsAckWait, m would have failed
// and [a z] been reopened at once (TestReview23...). Not new in f3576df:
// the test fails the same way at 092c3fd.
func TestReview24SlowTogetherRefusalLeavesEveryoneWithoutAStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	const a, m, z = "test://a", "test://m", "test://z"
	srv := newReview3Server(t)
	srv.refusal = func(rctx context.Context, f listenFilter2) map[string]any {
		e := capAt2(rctx, f)
		if e != nil {
			select {
			case <-time.After(subsAckWait + time.Second):
			case <-rctx.Done():
			}
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
	um, err := s.Subscribe(ctx, m, func() {})
	if err == nil {
		defer um()
	}
	t.Logf("Subscribe(%s): %v", m, err)
	since := srv.count()
	require.True(t, srv.waitLiveAckedNamingAll(since, 30*time.Second, a, z),
		"30 s after Subscribe(%s) returned (%v), no acknowledged stream names %s and %s, subscribed before: the server "+
			"refuses every stream naming the three, each accepted alone", m, err, a, z)
}
