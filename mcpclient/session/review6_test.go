package session

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// review6WaitAllOrDropped waits (a liveness bound, not a timing assertion)
// for an open, acknowledged stream naming every one of uris among those
// opened after the first since, or for the dropped-subscriptions warning:
// it reports which came (neither: false, false).
func review6WaitAllOrDropped(ctx context.Context, srv *review2Server, logs *review2Logs, since int, uris ...string) (live, dropped bool) {
	for {
		if logs.has("they are dropped") {
			return false, true
		}
		if srv.waitLiveAckedNamingAll(since, 0, uris...) {
			return true, false
		}
		select {
		case <-ctx.Done():
			return false, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestReview6ReprobesBackToBackDropASubscription: f633a5e asks the probes
// refused while another was accepted again once, a second later, so that a
// server that gives a stream's room back only once it noticed the stream
// end (mcpflow's per-user stream slots; slotServer) does not have an
// acknowledged subscription dropped for the slot of the previous probe.
// The second round probes its URIs back to back, though: with four
// established URIs on an upstream allowing the user one stream, a
// 'too many streams' refusal of the session's stream (another client of
// the user held the slot a moment) has the first round accept a and c and
// refuse b and d (each refused for the slot of the probe before it); in
// the second round, a second later, the first of b and d is accepted and
// the other refused again - for the slot of the re-probe just before it -
// and dropped for good (a warning), though no answer of the server said
// anything about it.
func TestReview6ReprobesBackToBackDropASubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	uris := []string{"test://a", "test://b", "test://c", "test://d"}
	srv := newSlotServer(t)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	for _, uri := range uris {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, uris...))
	var st *review2Stream
	srv.mu.Lock()
	for _, c := range srv.streams {
		c.mu.Lock()
		if c.acked && !c.closed && len(c.filter.ResourceSubscriptions) == len(uris) {
			st = c
		}
		c.mu.Unlock()
	}
	srv.mu.Unlock()
	require.NotNil(t, st)
	srv.waitOneSlot(ctx, t) // the earlier streams' slots are given back before the limit applies

	since := srv.count()
	srv.mu.Lock()
	srv.limit, srv.full = 1, 1 // one stream per user; the next listen refused as too many
	srv.mu.Unlock()
	st.end <- "abort"
	live, dropped := review6WaitAllOrDropped(ctx, srv.review2Server, logs, since, uris...)
	s.subs.mu.Lock()
	left := slices.Sorted(func(yield func(string) bool) {
		for u := range s.subs.byURI {
			if !yield(u) {
				return
			}
		}
	})
	s.subs.mu.Unlock()
	srv.mu.Lock()
	refusedN := srv.refused
	srv.mu.Unlock()
	require.False(t, dropped, "an acknowledged subscription was dropped (still subscribed: %v) after %d listens were refused "+
		"as 'too many streams': the second round's re-probes run back to back, each refused for the previous one's slot", left, refusedN)
	require.True(t, live, "no stream names %v again", uris)
}

// TestReview6ProbeBudgetSpentDropsAfterOneRefusal: an earlier
// subscription is to be dropped only when the server refuses its URI
// alone "twice a second apart" while accepting another (docs, f633a5e).
// probeRefused returns its first round's answers as they are when its
// 15 s (probeRefusedWait) run out before the second round - here three
// URIs whose lone streams the server acknowledges only after subsAckWait
// (an upstream that subscribes at its own upstream first) - and refused
// drops test://a on the one 'too many streams' refusal of its probe (the
// server out of room a moment), test://b having been accepted alone.
func TestReview6ProbeBudgetSpentDropsAfterOneRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	uris := []string{"test://a", "test://b", "test://c", "test://d", "test://e"}
	srv, full := tooManyServer(t)
	var holding atomic.Bool
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return holding.Load() && len(f.ResourceSubscriptions) == 1 && f.ResourceSubscriptions[0] > "test://b", nil
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	for _, uri := range uris {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, uris...))
	var st *review2Stream
	srv.mu.Lock()
	for _, c := range srv.streams {
		c.mu.Lock()
		if c.acked && !c.closed && len(c.filter.ResourceSubscriptions) == len(uris) {
			st = c
		}
		c.mu.Unlock()
	}
	srv.mu.Unlock()
	require.NotNil(t, st)

	since := srv.count()
	holding.Store(true)
	full.Store(2) // the session's stream and the probe of a: too many streams, once each
	st.end <- "abort"
	live, dropped := review6WaitAllOrDropped(ctx, srv.review2Server, logs, since, uris...)
	require.False(t, dropped, "test://a was dropped after one 'too many streams' refusal of its probe: "+
		"probeRefused's %s ran out before it asked again", probeRefusedWait)
	require.True(t, live, "no stream names %v again", uris)
}
