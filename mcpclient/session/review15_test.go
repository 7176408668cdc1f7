package session

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/mcpclient/streamhttp"
)

// review15StackHas reports whether a goroutine's stack holds every one of
// parts (waitStack's test, once).
func review15StackHas(parts ...string) bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(g, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestReview15ResubscribeAnsweredByTheStreamBeingStopped: f1e88a1 lets
// awaitStream answer a first Subscribe at once when s.subs.stream was
// acknowledged naming its URI and has not ended. It does not ask whether
// the listener is already replacing that stream. The last caller of a
// unsubscribes: the listener takes the wake and stops the stream [a]
// (cur.stop: its ctx cancelled, the server sees the stream close), and
// waits for its Listen to return. A first Subscribe(a) in that window
// finds s.subs.stream still set to the stopped stream (acked, named a,
// ended not yet closed) and returns success at once, while no stream
// naming a is open at the server (the listener opens [a] again only once
// the old one's Listen returned): an update of a sent right after
// Subscribe returns is lost, which Subscribe's doc ("an update sent after
// Subscribe returns is not lost to a stream still opening") promises
// against. Before f1e88a1, awaitStream's relistenLocked found the filter
// [a] of the stopping stream and Subscribe waited for the next stream's
// acknowledgement. The window is widened by parking the old stream's
// reader (its transport's notification handler) after its acknowledgement
// was handled, as TestReview2SubscribeReleasedByAnOlderStreamsAck does.
func TestReview15ResubscribeAnsweredByTheStreamBeingStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview2Server(t)
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()

	parked, release := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	unpark := func() { releaseOnce.Do(func() { close(release) }) }
	defer unpark()
	s.client.GetTransport().(*streamhttp.Transport).SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		s.onNotification(n) // handled first: the stream is acknowledged naming a
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			once.Do(func() {
				close(parked)
				<-release // the first stream's reader stays here
			})
		}
	})

	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	select {
	case <-parked:
	case <-ctx.Done():
		t.Fatal("the stream naming a was not acknowledged")
	}
	require.True(t, srv.liveAckedNaming(a))

	// The last caller: the listener stops [a], and waits for its Listen.
	ua()
	// The listener in cur.stop of the stream it cancelled.
	stopping := func() bool {
		return review15StackHas("[chan receive", "(*Session).listen.func1", "(*Session).listenLoop")
	}
	waitStack(t, ctx, "[chan receive", "(*Session).listen.func1", "(*Session).listenLoop")
	s.subs.mu.Lock()
	old := s.subs.stream
	s.subs.mu.Unlock()

	type result struct {
		unsubscribe func()
		err         error
		stopping    bool // the listener still stopping the stream old as Subscribe returned
	}
	done := make(chan result, 1)
	go func() {
		u, err := s.Subscribe(ctx, a, func() {})
		s.subs.mu.Lock()
		same := s.subs.stream == old
		s.subs.mu.Unlock()
		done <- result{u, err, same && stopping()}
	}()
	var r result
	for waited := false; !waited; {
		select {
		case r = <-done:
			waited = true
		case <-ctx.Done():
			t.Fatal("Subscribe did not return")
		case <-time.After(10 * time.Millisecond):
			if review15StackHas("[select", "(*Session).awaitStream") {
				// It waits for the next stream's acknowledgement: let
				// the listener open it.
				unpark()
			}
		}
	}
	unpark()
	require.NoError(t, r.err)
	defer r.unsubscribe()
	require.False(t, r.stopping,
		"Subscribe(%s) returned success while the listener was stopping the acknowledged stream [%s] (its request "+
			"cancelled, its Listen not returned yet) and no other stream was open: awaitStream took that stream's "+
			"acknowledgement for an answer, and an update sent now is lost", a, a)
}

// TestReview15ListsWaitOutTheBackoffOfARefusedURI: f1e88a1's roomless is
// set by refused when "each URI was refused alone"; for a stream naming
// one URI that is the stream's refusal itself, whatever it says and
// although the stream also asked for list changes. Here the session hears
// list changes (HearLists) and is subscribed to a; the server ends the
// stream and from then on refuses any stream naming a with -32602
// (cannot subscribe: the resource is gone - not out of room), and the
// listener retries [a]+lists with its backoff. The caller unsubscribes a:
// what is wanted now is list changes alone, a filter no stream was refused
// for. narrowerRefused takes it for "what the server refused, less" and
// the listener leaves the wake to its retry: no stream at all (the
// session hears no list change) until the backoff runs out (up to
// listenRetryMax). Before f1e88a1 the listener opened the lists-only
// stream at once ("a new filter, not refused yet"), and does again since
// roomless and narrowerRefused were taken out (review16_test.go).
func TestReview15ListsWaitOutTheBackoffOfARefusedURI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a = "test://a"
	srv := newReview3Server(t)
	var gone atomic.Bool
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !gone.Load() || !slices.Contains(f.ResourceSubscriptions, a) {
			return nil
		}
		refusals.Add(1)
		return review3Refused // -32602 cannot subscribe
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	s.HearLists()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	var st *review2Stream
	for st == nil || !st.names(a) {
		select {
		case st = <-srv.opened:
		case <-ctx.Done():
			t.Fatal("no stream naming a")
		}
	}
	require.True(t, st.filter.PromptsListChanged && st.filter.ResourcesListChanged)

	gone.Store(true)
	st.end <- "result" // the listener asks for [a]+lists again after 1 s: refused
	for {
		s.subs.mu.Lock()
		retrying := s.subs.retrying
		s.subs.mu.Unlock()
		if refusals.Load() >= 1 && retrying {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not wait to ask again")
		case <-time.After(5 * time.Millisecond):
		}
	}
	since := srv.count()
	ua() // list changes alone are wanted now

	// Until the listener took ua's wake and went back to its select: then
	// it has opened the lists-only stream, or left it to the retry.
	for {
		s.subs.mu.Lock()
		pending := len(s.subs.wake)
		s.subs.mu.Unlock()
		if pending == 0 && review15StackHas("[select", "(*Session).listenLoop(") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not take the wake")
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.subs.mu.Lock()
	retrying := s.subs.retrying
	var filter mcp.SubscriptionFilter
	if s.subs.stream != nil {
		filter = s.subs.stream.filter
	}
	s.subs.mu.Unlock()
	require.False(t, retrying && srv.count() == since,
		"with %s unsubscribed (the URI the server refused with -32602), the listener left the list-changes-only stream "+
			"to its backoff's retry (the stream asks for %v, refused): the session hears no list change until then",
		a, filter.ResourceSubscriptions)
}
