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
	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// TestReview16RetriedSubscribeDuringTheBackoffSucceedsUnasked: the server
// is out of room (every subscriptions/listen refused, -32002 "retry
// shortly"); a is subscribed, and the listener retries [a] on its
// backoff. A first Subscribe(b) opens [a b] at once (a new filter),
// refused, and fails with the refusal (b refused alone too): right. Its
// caller tries again, as -32002 says. Since f1e88a1 the failed
// Subscribe's narrowing to [a] is held back for the retry
// (narrowerRefused), so the listener's last filter stays [a b]; the next
// Subscribe(b) wants [a b] again, which listenLoop takes for "nothing new
// to ask for: the backoff stands", and relistenLocked for the refused
// stream's retry. Each such Subscribe waits for the listener's retry,
// whose backoff keeps doubling (1 s, 2 s, 4 s, 8 s): once it is longer
// than subsAckWait, Subscribe's wait runs out before any stream naming b
// is even sent, and Subscribe returns success (with the warning that the
// server "did not acknowledge"), though the server refused every stream
// naming b; the retry refuses it later and nobody is told. Before
// f1e88a1, the narrowing [a] was opened at once, and each Subscribe(b)
// was a new filter, sent at once and failed with the server's refusal.
// Fixed by taking roomless and narrowerRefused out again: a narrowing is
// a new filter, opened at once (one more listen to a server out of room
// per failed Subscribe, and the backoff starts over: a cost, not a lie).
func TestReview16RetriedSubscribeDuringTheBackoffSucceedsUnasked(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var outOfRoom atomic.Bool
	var mu sync.Mutex
	var namingB []time.Time // refusals of streams naming b (the listener's and the probes)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !outOfRoom.Load() {
			return nil
		}
		if slices.Contains(f.ResourceSubscriptions, b) {
			mu.Lock()
			namingB = append(namingB, time.Now())
			mu.Unlock()
		}
		return map[string]any{"code": -32002, "message": "too many streams open for this user: retry shortly"}
	}
	refusedB := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range namingB {
			if at.After(after) {
				n++
			}
		}
		return n
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
	st.end <- "result" // refused from here on

	// The caller of b tries again each time it is refused (no pause:
	// the -32002 says "retry shortly"). Every stream naming b is refused,
	// so each Subscribe(b) is to fail.
	for round := range 6 {
		start := time.Now()
		ub, err := s.Subscribe(ctx, b, func() {})
		took := time.Since(start)
		if err == nil {
			ub()
			t.Fatalf("round %d: Subscribe(%s) returned success after %s (warned 'did not acknowledge': %v), though the server "+
				"refuses every subscriptions/listen; streams naming %s sent during it: %d (the listener held the wake "+
				"[%s %s] for its backoff's retry, longer than subsAckWait %s)",
				round, b, took.Round(time.Millisecond), logs.has("did not acknowledge"), b, refusedB(start), a, b, subsAckWait)
		}
		var rpc *mcpflow.RPCError
		require.True(t, errors.As(err, &rpc), "round %d: Subscribe(%s): %v", round, b, err)
		require.Equal(t, -32002, rpc.Code)
	}
}

// TestReview16AckOfTheStreamBeingStoppedAnswersSubscribe: 6d69750 ("a
// stream being ended answers no Subscribe") marks a stream over once the
// listener starts ending it and keeps awaitStream's shortcut from
// answering from it; acknowledged still answers from it. Subscribe(a)
// waits for the stream [a], whose acknowledgement the server sent and the
// client's reader holds (parked in the transport's notification handler,
// as in TestReview15ResubscribeAnsweredByTheStreamBeingStopped). HearLists
// asks for a new filter: the listener stops [a] (over, its request
// cancelled) and waits for its Listen. The parked
// acknowledgement then reaches acknowledged, which finds s.subs.stream,
// the stream being stopped, and releases a: Subscribe(a) returns success
// while the only stream naming a it will hear is the next one, [a] with
// the lists, not acknowledged yet (held here), so an update sent right
// after Subscribe returns is lost.
func TestReview16AckOfTheStreamBeingStoppedAnswersSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview2Server(t)
	nextAck := make(chan struct{})
	var nextOnce sync.Once
	releaseNext := func() { nextOnce.Do(func() { close(nextAck) }) }
	defer releaseNext()
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return f.PromptsListChanged, nextAck // the stream with the lists: held until released
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()

	parked, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	unpark := func() { releaseOnce.Do(func() { close(release) }) }
	defer unpark()
	s.client.GetTransport().(*streamhttp.Transport).SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			once.Do(func() {
				close(parked)
				<-release // [a]'s acknowledgement waits here, read off the wire
			})
		}
		s.onNotification(n)
	})

	type result struct {
		unsubscribe func()
		err         error
		live        bool // a stream naming a, opened after [a], acknowledged as Subscribe returned
	}
	done := make(chan result, 1)
	go func() {
		u, err := s.Subscribe(ctx, a, func() {})
		done <- result{u, err, srv.waitLiveAckedNaming(a, 1, 0)}
	}()
	var first *review2Stream
	select {
	case first = <-srv.opened:
	case <-ctx.Done():
		t.Fatal("no stream")
	}
	require.True(t, first.names(a))
	select {
	case <-parked:
	case <-ctx.Done():
		t.Fatal("[a] was not acknowledged")
	}
	waitStack(t, ctx, "[select", "(*Session).awaitStream")

	s.HearLists() // a new filter: the listener stops [a]
	waitStack(t, ctx, "[chan receive", "(*Session).listen.func1", "(*Session).listenLoop")
	s.subs.mu.Lock()
	over := s.subs.stream != nil && s.subs.stream.over
	s.subs.mu.Unlock()
	require.True(t, over)
	unpark() // [a]'s acknowledgement reaches acknowledged

	var r result
	for waited := false; !waited; {
		select {
		case r = <-done:
			waited = true
		case <-ctx.Done():
			t.Fatal("Subscribe did not return")
		case <-time.After(20 * time.Millisecond):
			if srv.count() >= 2 {
				releaseNext() // Subscribe waits on: let the next stream be acknowledged
			}
		}
	}
	releaseNext()
	require.NoError(t, r.err)
	defer r.unsubscribe()
	require.True(t, r.live,
		"Subscribe(%s) returned success before any stream opened after [%s] (which the listener was stopping: over) was "+
			"acknowledged: [%s]'s acknowledgement, read before the stop and handled after, answered it", a, a, a)
}
