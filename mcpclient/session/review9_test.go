package session

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestReview9RefusalCutShortWaitRunsOutAsSuccess: 8e0d192's rule is that
// a Subscribe left waiting after a refusal fails when its wait runs out
// (running out is success only for a server that never answered). It
// holds for a URI refused marks again, not for one whose verdict
// refused never gives: when the listener replaces the refused stream while
// refused probes (here another caller's HearLists - WatchLists - during
// the probe of test://a, held by the server), refused returns early
// ("replaced meanwhile: the next stream's answer counts"), clears judging
// and sets nothing. The next stream names w again, and the server (an
// upstream that takes its time) answers it after the 5 s wait: the wait
// runs out with neither judging nor again set, and Subscribe(test://w)
// returns nil ("did not acknowledge in time") though the server refused
// the one stream naming w it answered and acknowledged none.
func TestReview9RefusalCutShortWaitRunsOutAsSuccess(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	gate := make(chan struct{})
	var gateOnce sync.Once
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	defer openGate()
	var slowRefusals atomic.Int32
	srv.refusal = func(rctx context.Context, f listenFilter2) map[string]any {
		if !slices.Contains(f.ResourceSubscriptions, w) {
			return nil
		}
		if f.PromptsListChanged || f.ResourcesListChanged { // the stream after HearLists: answered late
			slowRefusals.Add(1)
			select {
			case <-gate:
			case <-rctx.Done():
			}
		}
		return review3Refused
	}
	var holding atomic.Bool
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return holding.Load() && slices.Equal(f.ResourceSubscriptions, []string{a}), nil // the probe of a: held
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))
	drainOpened(srv.review2Server)
	holding.Store(true)

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, w, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	for probe := (*review2Stream)(nil); probe == nil; {
		select {
		case st := <-srv.opened:
			if slices.Equal(st.filter.ResourceSubscriptions, []string{a}) {
				probe = st // {a, w} was refused: refused probes a, held
			}
		case err := <-done:
			t.Fatalf("Subscribe(%s) returned (%v) before refused probed %s", w, err, a)
		case <-ctx.Done():
			t.Fatal("no probe")
		}
	}
	s.subs.mu.Lock()
	judged := s.subs.waiting[w] != nil && s.subs.waiting[w].judging
	s.subs.mu.Unlock()
	require.True(t, judged)
	s.HearLists() // another caller watches the lists: the listener replaces the refused stream
	tm := time.AfterFunc(2*subsAckWait, openGate)
	defer tm.Stop()

	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.True(t, err != nil || srv.ackedNaming(w),
		"Subscribe(%s) returned nil though the server refused the stream naming it and acknowledged none "+
			"(refusals of the stream after HearLists still pending: %d; did-not-acknowledge warning: %v): "+
			"refused's verdict was cut short by the stream's replacement and the wait ran out as a success",
		w, slowRefusals.Load(), logs.has("did not acknowledge"))
}

// TestReview9AnswerAsAgainWaitRunsOutIgnored: awaitStream's rule for an
// answer that comes as the wait runs out is "the answer counts" (it reads
// ch when its waiting entry is gone). 8e0d192's branch for a URI left
// waiting after a refusal (again) sets its error before that check,
// and the check reads ch only when err is nil: an acknowledgement of the
// listener's next stream naming the URI that acknowledged takes between
// the timer firing and awaitStream's look at again is dropped, and
// Subscribe fails ("refused ... and acknowledged none since") - then
// unsubscribes a URI the server had just subscribed. The acknowledgement
// is placed in that window deterministically: the test holds s.subs.mu
// until awaitStream's timer branch waits for it, and does there what
// acknowledged does for the open stream (acked, releaseLocked of each URI
// it names), then lets go.
func TestReview9AnswerAsAgainWaitRunsOutIgnored(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	var mu sync.Mutex
	armed, pairRefused, wRefused := false, false, false
	srv := newReview2Server(t)
	srv.refuse = func(f listenFilter2) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !armed:
			return false
		case len(f.ResourceSubscriptions) > 1 && !pairRefused: // the first {a, w}: refused once
			pairRefused = true
			return true
		case slices.Equal(f.ResourceSubscriptions, []string{w}) && !wRefused: // w's first probe: refused once
			wRefused = true
			return true
		}
		return false
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return len(f.ResourceSubscriptions) > 1, release // the listener's next {a, w}: acknowledged when released
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))
	drainOpened(srv)
	mu.Lock()
	armed = true
	mu.Unlock()

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, w, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	// {a, w} refused; a accepted alone, w refused alone then accepted a
	// second later: w waits again for the listener's next {a, w}.
	for pair := (*review2Stream)(nil); pair == nil; {
		select {
		case st := <-srv.opened:
			if st.names(a) && st.names(w) {
				pair = st
			}
		case err := <-done:
			t.Fatalf("Subscribe(%s) returned (%v) before the listener's next stream naming it", w, err)
		case <-ctx.Done():
			t.Fatal("no stream naming a and w after the refusal")
		}
	}
	locked := true
	s.subs.mu.Lock()
	defer func() {
		if locked {
			s.subs.mu.Unlock()
		}
	}()
	cur := s.subs.stream
	require.True(t, s.subs.waiting[w] != nil && s.subs.waiting[w].again, "w is not left waiting after the refusal")
	require.NotNil(t, cur)
	require.Equal(t, []string{a, w}, cur.filter.ResourceSubscriptions)
	// awaitStream's wait runs out: its timer branch waits for s.subs.mu.
	waitStack(t, ctx, "(*Session).awaitStream", "Mutex).Lock")
	// The server's acknowledgement of {a, w}, as acknowledged takes it.
	cur.acked = true
	for _, uri := range cur.filter.ResourceSubscriptions {
		s.releaseLocked(uri, nil)
	}
	locked = false
	s.subs.mu.Unlock()
	releaseOnce.Do(func() { close(release) }) // the server's own, later: nothing left to release

	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.NoError(t, err, "Subscribe(%s) failed though the stream naming it was acknowledged as its wait ran out "+
		"(the answer counts): the again branch set its error before awaitStream read ch", w)
}

// TestReview9FailedReadLeavesURIOnTheStream: Subscribe puts a first URI
// in s.subs.byURI before its resources/read, so a stream the listener
// opens meanwhile names it (here the server cut the session's stream and
// the listener opened it again after listenRetryMin). When the read fails
// (-32602: not this server's resource, the common case of
// SubscribeResource trying each server in turn), Subscribe deletes the
// URI but, unlike awaitStream's failures, does not ask for the stream
// again (relistenLocked): the session's stream keeps naming a URI nobody
// is subscribed to, for as long as nothing else changes - against "one
// subscriptions/listen stream naming every subscribed URI, reopened as
// they change". (A server that refuses a stream naming an unknown URI
// refuses it instead, and the other subscriptions are without a stream
// through refused's probes and the listener's backoff.)
func TestReview9FailedReadLeavesURIOnTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, x = "test://a", "test://x"
	srv := newReview2Server(t)
	url, reading, release := heldRead(t, x, map[string]any{"code": mcp.INVALID_PARAMS, "message": "resource not found: " + x}, srv.serve)
	defer release()
	s := dialReview2(t, ctx, url, nil)
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

	done := make(chan error, 1)
	go func() {
		u, err := s.Subscribe(ctx, x, func() {})
		if err == nil {
			u()
		}
		done <- err
	}()
	select {
	case <-reading:
	case <-ctx.Done():
		t.Fatal("no resources/read of x")
	}
	since := srv.count()
	st.end <- "abort" // the listener opens the stream again after listenRetryMin, naming x
	require.True(t, srv.waitLiveAckedNaming(x, since, 15*time.Second), "no stream named %s while it was read", x)
	release()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	var rpc *mcpflow.RPCError
	require.True(t, errors.As(err, &rpc), "Subscribe(%s): %v", x, err)
	require.Equal(t, mcp.INVALID_PARAMS, rpc.Code)

	// A bounded wait for the event: an open, acknowledged stream naming a
	// and no open stream naming x.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.subs.mu.Lock()
		cur := s.subs.stream
		_, kept := s.subs.byURI[x]
		s.subs.mu.Unlock()
		if !srv.liveAckedNaming(x) && cur != nil && !slices.Contains(cur.filter.ResourceSubscriptions, x) && srv.liveAckedNaming(a) {
			return
		}
		if time.Now().After(deadline) {
			var filter []string
			if cur != nil {
				filter = cur.filter.ResourceSubscriptions
			}
			t.Fatalf("10 s after Subscribe(%s) failed (%v; still in byURI: %v), the session's stream still asks for %v: "+
				"the failed first Subscribe did not ask for the stream again", x, err, kept, filter)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
