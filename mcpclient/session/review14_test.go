package session

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestReview14ResubscribeBeforeTheListenerLooksWaitsOutTheAck: 58e8d97
// makes the listener ignore a wake that finds the filter its open stream
// asks for (listenLoop: "nothing new to ask for"), and 8ff5b95 makes
// relistenLocked do nothing while the open stream asks for the filter
// wanted. Both compare filters only; neither asks whether a first
// Subscribe waits for an acknowledgement the open stream can no longer
// give (it gave its one ack when it opened). The last caller of a leaves
// (unsubscribe: a out of byURI, a wake) and a's first Subscribe comes
// before the listener takes that wake (an interleaving the scheduler
// allows: unsubscribe and Subscribe each take s.subs.mu once, the
// listener in between or not). The listener then finds [a], what its
// open, acknowledged stream asks for, and leaves it; awaitStream's
// relistenLocked finds the same. No stream is opened, no acknowledgement
// comes: Subscribe(a) holds s.subs.req (every Subscribe and unsubscribe
// of the session) for subsAckWait and warns that the server "did not
// acknowledge" a stream it acknowledged before. Before 58e8d97 the
// listener took the wake and opened the stream again. The interleaving
// is forced here by running unsubscribe's and Subscribe's steps under one
// hold of s.subs.mu (the same statements, in the same order).
func TestReview14ResubscribeBeforeTheListenerLooksWaitsOutTheAck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview2Server(t)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	cb := func() {}
	ua, err := s.Subscribe(ctx, a, cb)
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	since := srv.count()

	// unsubscribe(a), the last caller, then Subscribe(a) up to its read,
	// with the listener not scheduled in between.
	require.NoError(t, s.subs.req.Acquire(ctx, 1))
	s.subs.mu.Lock()
	for k := range s.subs.byURI[a] {
		delete(s.subs.byURI[a], k) // unsubscribe
	}
	delete(s.subs.byURI, a)
	s.relistenLocked()
	cb2 := func() {}
	s.subs.byURI[a] = map[*func()]bool{&cb2: true} // Subscribe: first
	if s.subs.first == nil {
		s.subs.first = map[string]bool{}
	}
	s.subs.first[a] = true
	w := s.waitLocked(a)
	s.subs.mu.Unlock()
	_, err = s.Request(ctx, mcp.MethodResourcesRead, a, map[string]any{"uri": a})
	require.NoError(t, err)
	start := time.Now()
	err = s.awaitStream(ctx, a, w)
	took := time.Since(start)
	s.subs.mu.Lock()
	delete(s.subs.first, a)
	s.subs.mu.Unlock()
	s.subs.req.Release(1)
	_ = ua // its caller is gone (deleted above)
	require.NoError(t, err)
	require.False(t, logs.has("did not acknowledge"),
		"a's first Subscribe, made before the listener took the wake of a's last unsubscribe, waited %s (subsAckWait %s) "+
			"for an acknowledgement and warned the server did not give it: the listener found the filter of its open, "+
			"acknowledged stream and opened nothing (%d streams opened since)", took.Round(time.Millisecond), subsAckWait, srv.count()-since)
}

// TestReview14NewURIDuringBackoffReachesTheServerAtOnce (holds): during
// the listener's backoff (4 s after two refusals, s.subs.retrying set),
// a first Subscribe of a URI no stream named is a new filter:
// relistenLocked wakes the listener, which opens [a b] at once, the
// server (with room again) acknowledges it, and Subscribe returns well
// within the backoff, without the "did not acknowledge" warning.
func TestReview14NewURIDuringBackoffReachesTheServerAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var outOfRoom atomic.Bool
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !outOfRoom.Load() {
			return nil
		}
		if refusals.Add(1) == 2 {
			outOfRoom.Store(false) // room again after the second refusal
		}
		return map[string]any{"code": -32002, "message": "too many streams open for this user: retry shortly"}
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	var st *review2Stream
	select {
	case st = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	outOfRoom.Store(true)
	st.end <- "result"
	// Wait until the listener holds back its retry (the second refusal
	// taken: s.subs.retrying).
	for {
		s.subs.mu.Lock()
		retrying := s.subs.retrying
		s.subs.mu.Unlock()
		if refusals.Load() >= 2 && retrying {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not wait to ask again")
		case <-time.After(5 * time.Millisecond):
		}
	}
	since := srv.count()
	start := time.Now()
	ub, err := s.Subscribe(ctx, b, func() {})
	took := time.Since(start)
	require.NoError(t, err)
	defer ub()
	require.False(t, logs.has("did not acknowledge"), "Subscribe(%s) during the backoff waited out its ack (%s)", b, took)
	require.True(t, srv.waitLiveAckedNamingAll(since, time.Second, a, b))
	require.Less(t, took, 2*listenRetryMin, "Subscribe(%s) during a 4 s backoff took %s", b, took)
}

// TestReview14UnsubscribeThenSubscribeWaitsOutTheAck: the same as
// TestReview14ResubscribeBeforeTheListenerLooksWaitsOutTheAck through the
// public API alone: the last caller of a unsubscribes and a caller
// subscribes to a again (a client's resubscribe). unsubscribe's wake makes
// the listener runnable, but it runs only once Subscribe blocks on its
// resources/read (Go hands the woken goroutine the sender's next slot), by
// then a is back in byURI: the listener finds [a], its open stream's
// filter, and keeps it; awaitStream's relistenLocked finds the same.
// Subscribe(a) waits subsAckWait for an acknowledgement that never comes
// and warns. Each of 3 rounds; the first that waits it out fails.
func TestReview14UnsubscribeThenSubscribeWaitsOutTheAck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview2Server(t)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	u, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	defer func() { u() }()
	for round := range 3 {
		since := srv.count()
		u()
		start := time.Now()
		u, err = s.Subscribe(ctx, a, func() {})
		took := time.Since(start)
		require.NoError(t, err)
		require.False(t, logs.has("did not acknowledge"),
			"round %d: unsubscribe(%s) (the last caller) then Subscribe(%s): Subscribe waited %s (subsAckWait %s) and "+
				"warned the server did not acknowledge; streams opened meanwhile: %d, one open and acknowledged naming %s: %v",
			round, a, a, took.Round(time.Millisecond), subsAckWait, srv.count()-since, a, srv.liveAckedNaming(a))
	}
}

// TestReview14UnsubscribeAllDuringBackoffAsksNothing (holds): the last
// subscription ends while the listener waits out its backoff after two
// refusals (s.subs.retrying set). The wake finds a new filter (nothing):
// the listener drops its retry, clears s.subs.retrying, and no
// subscriptions/listen reaches the server when the backoff would have
// run out (a bounded wait for that event: 4 s from the second refusal,
// plus a second).
func TestReview14UnsubscribeAllDuringBackoffAsksNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview3Server(t)
	var outOfRoom atomic.Bool
	var mu sync.Mutex
	var refusedAt []time.Time
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !outOfRoom.Load() {
			return nil
		}
		mu.Lock()
		refusedAt = append(refusedAt, time.Now())
		mu.Unlock()
		return map[string]any{"code": -32002, "message": "too many streams open for this user: retry shortly"}
	}
	refusals := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(refusedAt)
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	var st *review2Stream
	select {
	case st = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	outOfRoom.Store(true)
	st.end <- "result"
	for {
		s.subs.mu.Lock()
		retrying := s.subs.retrying
		s.subs.mu.Unlock()
		if len(refusals()) >= 2 && retrying {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not wait to ask again")
		case <-time.After(5 * time.Millisecond):
		}
	}
	second := refusals()[1]
	opened := srv.count()
	ua()
	until := second.Add(5 * listenRetryMin)
	for time.Now().Before(until) {
		if n := len(refusals()); n > 2 || srv.count() > opened {
			t.Fatalf("with nothing subscribed, the listener asked for a stream again (%d refused, %d opened since)", n-2, srv.count()-opened)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.subs.mu.Lock()
	retrying := s.subs.retrying
	s.subs.mu.Unlock()
	require.False(t, retrying, "s.subs.retrying still set with no retry to come")
}
