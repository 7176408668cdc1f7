package session

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview18AckedLateAndEndedAtOnceResetsTheBackoff: listenStable is
// measured from listen()'s call (listenStream.opened), not from the
// server's acknowledgement. A server that holds each subscriptions/listen
// stream unacknowledged for listenStable, then acknowledges it and ends it
// at once, is exactly the "acknowledged and ended at once" server of
// 75469ed (the stream stood acknowledged for no time at all), yet each end
// puts the backoff back to listenRetryMin: the listener asks again once a
// second after each, instead of 1, 2, 4 s ...
func TestReview18AckedLateAndEndedAtOnceResetsTheBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv := newReview2Server(t)
	rels := make(chan chan struct{}, 16)
	srv.holdAck = func(listenFilter2) (bool, <-chan struct{}) {
		rel := make(chan struct{})
		rels <- rel
		return true, rel
	}
	s := dialReview2(t, ctx, srv.URL, &review2Logs{})
	defer s.Close()
	s.HearLists() // review2Server declares both listChanged: a stream asking for them

	next := func() (*review2Stream, chan struct{}) {
		select {
		case st := <-srv.opened:
			select {
			case rel := <-rels: // holdAck runs right after the stream is announced
				return st, rel
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		t.Fatal("no subscriptions/listen stream opened")
		return nil, nil
	}
	var ended time.Time
	for i := 0; i < 3; i++ {
		st, rel := next()
		// Held unacknowledged a little longer than listenStable ...
		select {
		case <-time.After(listenStable + 500*time.Millisecond):
		case <-ctx.Done():
			t.Fatal("ctx")
		}
		close(rel)
		require.Eventually(t, func() bool { // ... then acknowledged,
			st.mu.Lock()
			defer st.mu.Unlock()
			return st.acked
		}, 10*time.Second, 5*time.Millisecond)
		st.end <- "result" // and ended at once (the ack is written first)
		ended = time.Now()
	}
	next()
	gap := time.Since(ended)
	// Measured from the acknowledgement, the backoff after the third such
	// stream is 4 s (1, 2, 4); measured from listen(), it is reset to 1 s
	// by each end. 2.5 s lies between with room on both sides.
	require.GreaterOrEqual(t, gap, 2500*time.Millisecond,
		"three streams each acknowledged and ended at once (held unacknowledged for %s first); the listener asked again "+
			"%s after the third, its backoff put back to %s each time", listenStable+500*time.Millisecond, gap, listenRetryMin)
}
