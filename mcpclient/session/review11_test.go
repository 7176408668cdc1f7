package session

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReview11FailedDuringItsReadStaysOnTheStream: since b46b57e a first
// Subscribe's wait starts before its resources/read, so the verdict on a
// stream the listener opened during the read (here another caller's
// HearLists) fails it at once: the server refuses w alone, accepts a
// alone, and releaseLocked hands w's Subscribe the refusal. But w stays
// in s.subs.byURI until its read returns (only endWaitLocked, after the
// read, takes it out and asks for the stream again): refused does not
// ask for the stream without w, and the listener's every retry names w
// again, is refused again and probed again. The rule broken (refused's
// doc): "The stream is then asked for without the URIs failed or
// dropped" (awaitStream's: "the other URIs get a stream without it").
// Meanwhile the session's established subscription to a has no stream
// for as long as w's read lasts (up to the call timeout).
func TestReview11FailedDuringItsReadStaysOnTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if slices.Contains(f.ResourceSubscriptions, w) { // w cannot be subscribed, alone or with others
			refusals.Add(1)
			return review3Refused
		}
		return nil
	}
	url, reading, release := heldRead(t, w, nil, srv.serve)
	s := dialReview2(t, ctx, url, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	defer release() // before ua, which waits for w's Subscribe
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, w, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	select {
	case <-reading:
	case <-ctx.Done():
		t.Fatal("no resources/read of w")
	}
	s.HearLists() // another caller watches the lists: the listener's next stream names a, w (still read)

	// The verdict on that stream answers w's Subscribe (refused alone)
	// while its read is still held.
	for {
		s.subs.mu.Lock()
		_, waits := s.subs.waiting[w]
		s.subs.mu.Unlock()
		if !waits && refusals.Load() > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Subscribe(%s) returned (%v) during its held read", w, err)
		case <-ctx.Done():
			t.Fatal("w's wait was never answered")
		case <-time.After(10 * time.Millisecond):
		}
	}
	answeredAt := refusals.Load()

	// A bounded wait for the event: an open, acknowledged stream of the
	// listener's (the lists asked for: not a probe) naming a and not w.
	deadline := time.Now().Add(10 * time.Second)
	for {
		srv.mu.Lock()
		streams := slices.Clone(srv.streams)
		srv.mu.Unlock()
		ok := false
		for _, st := range streams {
			st.mu.Lock()
			ok = ok || st.acked && !st.closed && st.filter.PromptsListChanged && st.names(a) && !st.names(w)
			st.mu.Unlock()
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			s.subs.mu.Lock()
			_, kept := s.subs.byURI[w]
			s.subs.mu.Unlock()
			t.Fatalf("10 s after the server's refusal failed Subscribe(%s) (during its read), no stream asks for %s without it "+
				"(%s still in byURI: %v; streams naming %s refused since: %d): the failed URI stays on the stream until its read returns",
				w, a, w, kept, w, refusals.Load()-answeredAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	release()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.Error(t, err)
}

// TestReview11AcceptedAloneWaitsOutTheListenersBackoff: before b46b57e
// awaitStream always woke the listener, which put its backoff back to
// listenRetryMin, so a URI that a refusal's verdict accepted alone (left
// waiting "for the stream the listener asks for again, at least
// subsAckWait from the verdict") had that stream a second after the
// verdict. Now awaitStream does not wake the listener when its open
// stream names the URI, and a stream the listener opens on a retry (here
// after the server refused the session's stream twice, as a server out
// of room does) names a URI whose first Subscribe reads it, with the
// backoff of those retries: the listener's filter changed, but the
// backoff is not put back to the start (listenLoop's rule: "back to the
// start ... when the filter asked for changes"). That stream is refused
// (a refused alone once, then accepted; w accepted alone: w waits
// again), and the listener asks again only after the doubled backoff,
// 8 s, while w's wait lasts subsAckWait from the verdict: Subscribe(w)
// fails ("refused ... and acknowledged none since") though the server
// accepted w alone and acknowledges the next stream naming it.
func TestReview11AcceptedAloneWaitsOutTheListenersBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	var outOfRoom atomic.Bool
	var aloneA, pairs atomic.Int32
	refusedPair := make(chan struct{})
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !outOfRoom.Load() {
			return nil
		}
		switch {
		case slices.Equal(f.ResourceSubscriptions, []string{a}):
			// the listener's two retries, then a's first probe: refused
			if aloneA.Add(1) <= 3 {
				return review3Refused
			}
		case slices.Equal(f.ResourceSubscriptions, []string{a, w}):
			if pairs.Add(1) == 1 { // the first stream naming both: refused
				close(refusedPair)
				return review3Refused
			}
		}
		return nil
	}
	holdW := make(chan struct{})
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return slices.Equal(f.ResourceSubscriptions, []string{w}), holdW // w's probe: once awaitStream waits
	}
	url, reading, release := heldRead(t, w, nil, srv.serve)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, url, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	defer release() // before ua, which waits for w's Subscribe
	var st *review2Stream
	select {
	case st = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))

	outOfRoom.Store(true)
	st.end <- "result" // the server ends the stream; the next two are refused (retries after 1 s, 2 s)
	for aloneA.Load() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not ask again")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The listener retries after 4 s: w's first Subscribe reads meanwhile.
	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, w, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	select {
	case <-reading:
	case <-ctx.Done():
		t.Fatal("no resources/read of w")
	}
	select {
	case <-refusedPair: // the retry named a and w
	case err := <-done:
		t.Fatalf("Subscribe(%s) returned (%v) during its held read", w, err)
	case <-ctx.Done():
		t.Fatal("no stream naming a and w")
	}
	release()
	waitStack(t, ctx, "awaitStream") // w waits, the refused stream naming it
	close(holdW)

	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.NoError(t, err, "Subscribe(%s) failed though the server accepted it alone and refused only a "+
		"(streams naming a and w asked for: %d): after the verdict the listener asked again only after its "+
		"backoff (8 s here), not within w's subsAckWait", w, pairs.Load())
}
