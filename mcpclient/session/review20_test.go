package session

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// review20Resubscribe runs the last caller's unsubscribe of uri and a new
// first Subscribe(uri) under one hold of s.subs.mu (the same statements,
// in the same order, as TestReview14ResubscribeBeforeTheListenerLooksWaitsOutTheAck):
// the listener takes unsubscribe's wake only once uri is back, as
// TestReview14UnsubscribeThenSubscribeWaitsOutTheAck reaches through the
// public API, and as a caller retrying a failed Subscribe at once does
// (the commit's own scenario). It returns Subscribe's error.
func review20Resubscribe(t *testing.T, ctx context.Context, s *Session, uri string) error {
	t.Helper()
	require.NoError(t, s.subs.req.Acquire(ctx, 1))
	defer s.subs.req.Release(1)
	s.subs.mu.Lock()
	delete(s.subs.byURI, uri) // unsubscribe of the last caller
	s.relistenLocked()
	cb := func() {}
	s.subs.byURI[uri] = map[*func()]bool{&cb: true} // Subscribe: first
	if s.subs.first == nil {
		s.subs.first = map[string]bool{}
	}
	s.subs.first[uri] = true
	w := s.waitLocked(uri)
	s.subs.mu.Unlock()
	defer func() {
		s.subs.mu.Lock()
		delete(s.subs.first, uri)
		s.subs.mu.Unlock()
	}()
	if _, err := s.Request(ctx, mcp.MethodResourcesRead, uri, map[string]any{"uri": uri}); err != nil {
		return err
	}
	return s.awaitStream(ctx, uri, w)
}

// TestReview20RunOutDuringTheBackoffGetsAnotherURIsRefusal: 8146805
// answers a first Subscribe whose wait runs out during the listener's
// backoff with listenStream.refusal, the server's refusal of the whole
// last stream, whichever URI it was about. test://a and test://w are
// subscribed; the server then refuses a (the resource removed), answering
// any stream naming a with a's -32602, as mcp-go's server does (the first
// URI it fails to subscribe); a stream naming w alone gets no answer
// (ended unacknowledged: a slow upstream, as in
// TestReview5WaitingSubscribeGetsAnotherURIsRefusalWhenItsProbeIsSlow).
// Each [a w] is refused, its probes accept nothing, so a is kept and the
// backoff doubles (1, 2, 4, 8 s). w's caller subscribes again during the
// 8 s backoff: its wait runs out before the retry, and Subscribe(w) fails
// with a's refusal, "subscribing to test://a: resource removed" (-32602),
// which SubscribeResource reads as w not found at this server
// (notFound), and which hands another caller's URI, and the server's data
// about it, to w's caller (on a shared session, another user's). The rule
// refused keeps (TestReview5...) is that a waiting URI gets the server's
// refusal of it alone, or the stream's only when no URI was refused
// alone; here a was refused alone, and nothing ever refused w.
func TestReview20RunOutDuringTheBackoffGetsAnotherURIsRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	const aRefused = `subscribing to "test://a": resource removed`
	srv := newReview3Server(t)
	var removed atomic.Bool
	var refusals atomic.Int32 // of the listener's streams [a w]
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if !removed.Load() || !slices.Contains(f.ResourceSubscriptions, a) {
			return nil
		}
		if len(f.ResourceSubscriptions) > 1 {
			refusals.Add(1)
		}
		return map[string]any{"code": mcp.INVALID_PARAMS, "message": aRefused}
	}
	wAlone := func(f listenFilter2) bool { return slices.Equal(f.ResourceSubscriptions, []string{w}) }
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return removed.Load() && wAlone(f), nil // w alone: never acknowledged ...
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	_, err = s.Subscribe(ctx, w, func() {})
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, w))
	var st *review2Stream
	srv.mu.Lock()
	for _, c := range srv.streams {
		if c.names(a) && c.names(w) {
			st = c
		}
	}
	srv.mu.Unlock()
	require.NotNil(t, st)
	go func() {
		for {
			select {
			case c := <-srv.opened:
				if wAlone(c.filter) && removed.Load() {
					c.end <- "result" // ... and ended at once: the probe hears nothing
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	removed.Store(true)
	st.end <- "result"
	// Until the listener waits out its backoff after the third refusal
	// (8 s: 1, 2, 4, then 8).
	for {
		s.subs.mu.Lock()
		retrying := s.subs.retrying
		s.subs.mu.Unlock()
		if refusals.Load() >= 3 && retrying {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not wait to ask again")
		case <-time.After(5 * time.Millisecond):
		}
	}

	err = review20Resubscribe(t, ctx, s, w)
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		require.NotEqual(t, aRefused, rpc.Message,
			"Subscribe(%s) failed with the server's refusal of %s (code %d: SubscribeResource reads it as %s not found, "+
				"and w's caller is handed %s's error and data); the server never refused %s", w, a, rpc.Code, w, a, w)
	}
}

// TestReview20RunOutDuringTheVerdictStillSucceeds: 5adc957 fails a
// first Subscribe whose wait runs out while s.subs.retrying is set, but
// the listener sets it only once the refused stream's Listen returned,
// which is after refused judged the refusal: with the stream naming more
// than one URI, up to probeRefusedWait (15 s) of probes. test://a, b and
// c are subscribed; the server then refuses a (any stream naming it,
// -32602 'resource removed'), and a stream naming b or c alone gets no
// answer (a slow upstream). The listener's [a b c] is refused; while
// refused probes b and c (5 s each; a's probe was refused at once), a's
// caller subscribes to it again. The listener finds [a b c], the refused
// stream still being judged, and leaves it (nothing new to ask for);
// a's wait runs out before the verdict, with s.subs.retrying not set yet
// and nothing naming a sent since it began, and Subscribe(a) returns
// success (warning that the server 'did not acknowledge'), though the
// server refused every stream naming a, its probe alone included. The
// verdict then finds a no longer waiting and keeps it: the listener asks
// for [a b c] again and again, refused, and a's caller is never told.
func TestReview20RunOutDuringTheVerdictStillSucceeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, b, c = "test://a", "test://b", "test://c"
	srv := newReview3Server(t)
	var removed atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if removed.Load() && slices.Contains(f.ResourceSubscriptions, a) {
			return map[string]any{"code": mcp.INVALID_PARAMS, "message": `subscribing to "test://a": resource removed`}
		}
		return nil
	}
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return removed.Load() && len(f.ResourceSubscriptions) == 1, nil // b or c alone: never acknowledged
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	for _, uri := range []string{a, b, c} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b, c))
	var st *review2Stream
	srv.mu.Lock()
	for _, x := range srv.streams {
		if x.names(a) && x.names(b) && x.names(c) {
			st = x
		}
	}
	srv.mu.Unlock()
	require.NotNil(t, st)
	for len(srv.opened) > 0 {
		<-srv.opened
	}

	removed.Store(true)
	st.end <- "result" // asked again after 1 s: refused, and judged
	// Until refused probes b alone (a's probe refused, c's still to come).
	for probing := false; !probing; {
		select {
		case x := <-srv.opened:
			probing = slices.Equal(x.filter.ResourceSubscriptions, []string{b})
		case <-ctx.Done():
			t.Fatal("b was not probed alone")
		}
	}
	s.subs.mu.Lock()
	retrying, over := s.subs.retrying, s.subs.stream.over
	s.subs.mu.Unlock()
	require.True(t, over && !retrying, "the refused stream is judged, the listener not in its backoff yet")

	err := review20Resubscribe(t, ctx, s, a)
	require.Error(t, err,
		"Subscribe(%s) returned success (warned 'did not acknowledge': %v) though the server refused the stream naming %s and "+
			"%s alone, and no stream naming %s went out during its wait: it ran out while refused judged the refusal, "+
			"before the listener set s.subs.retrying", a, logs.has("did not acknowledge"), a, a, a)
}
