package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview8AcceptedAloneAfterRefusalSucceedsUnsubscribed: test://a is
// established; then the server refuses every stream naming more than one
// URI (after 2.5 s, "cannot subscribe": it never subscribes a and w
// together), and refuses w's first probe alone (a slot not yet given
// back), accepting it when re-probed. 1f5f76c's once=true makes refused
// leave the waiting Subscribe(w) "waiting for the listener's next
// stream", but judging is cleared and awaitStream's 5 s timer is not
// extended for that next stream (backoff 1 s + the server's answer):
// the timer runs out between the two refusals and Subscribe(w) returns
// nil (a warning) though the server never subscribed w. Before 1f5f76c
// it failed with the stream's refusal. w then stays in byURI, and every
// later {a, w} stream is refused: a's updates are lost too.
func TestReview8AcceptedAloneAfterRefusalSucceedsUnsubscribed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	var mu sync.Mutex
	armed, wRefused := false, false
	srv := newReview2Server(t)
	srv.refuse = func(f listenFilter2) bool {
		mu.Lock()
		if !armed {
			mu.Unlock()
			return false
		}
		if len(f.ResourceSubscriptions) > 1 {
			mu.Unlock()
			time.Sleep(2500 * time.Millisecond) // a slow refusal of the pair
			return true
		}
		defer mu.Unlock()
		if len(f.ResourceSubscriptions) == 1 && f.ResourceSubscriptions[0] == w && !wRefused {
			wRefused = true // w's first probe: refused alone once
			return true
		}
		return false
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))
	mu.Lock()
	armed = true
	mu.Unlock()

	start := time.Now()
	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
		mu.Lock()
		refusedAlone := wRefused
		mu.Unlock()
		t.Fatalf("Subscribe(%s) succeeded after %v though the server refused every stream naming it with %s (w refused alone once: %v); "+
			"refused left it waiting and its timer ran out before the listener's next stream was answered",
			w, time.Since(start).Round(100*time.Millisecond), a, refusedAlone)
	}
}
