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

// TestReview12FailedReadReplacesTheStream: since b46b57e a first
// Subscribe's failed resources/read ends its wait through endWaitLocked,
// which always asks the listener for the stream again (relistenLocked),
// whether or not any stream ever named the URI. A failed read is the
// common case: SubscribeResource (mcpclient/surface.go) tries each server
// in turn, and every server before the resource's own answers its read
// -32602, not found. Each such Subscribe makes the listener stop the
// session's open, acknowledged stream and open the same one again (and
// puts its backoff back to the start). Against a server that counts
// streams (mcpflow's server.max_mcp_streams_per_user, slotServer) the
// replacement is refused as too many, and the established subscription
// has no stream until the listener's retry; its updates meanwhile are
// lost. The rule broken is b46b57e's own: a stream is asked for "only
// when ... the open one does not name it (no needless replacement
// against a server's stream limit)"; relistenLocked asks for "the URIs
// subscribed now", which are the same before and after the failed read.
func TestReview12FailedReadReplacesTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const a, x = "test://a", "test://elsewhere"
	srv := newSlotServer(t)
	url, _, release := heldRead(t, x, map[string]any{"code": mcp.INVALID_PARAMS, "message": "resource not found: " + x}, srv.serveSlots)
	release() // not held: answered at once, not found
	s := dialReview2(t, ctx, url, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	require.True(t, srv.waitLiveAckedNaming(a, 0, 10*time.Second))
	srv.waitOneSlot(ctx, t)
	srv.mu.Lock()
	srv.limit = 1 // the user's one stream: this session's
	srv.mu.Unlock()
	since := srv.count()

	// Another server's resource: not found here.
	_, err = s.Subscribe(ctx, x, func() {})
	var rpc *mcpflow.RPCError
	require.True(t, errors.As(err, &rpc), "Subscribe(%s): %v", x, err)
	require.Equal(t, mcp.INVALID_PARAMS, rpc.Code)

	// No stream ever named x: nothing is to be asked of the server. A
	// bounded wait for the event (a listen reaching the server).
	deadline := time.After(3 * time.Second)
	for {
		srv.mu.Lock()
		opened, refused := len(srv.streams)-since, srv.refused
		srv.mu.Unlock()
		if opened > 0 || refused > 0 {
			t.Fatalf("a Subscribe whose resources/read failed (no stream ever named %s) made the listener replace the "+
				"session's acknowledged stream naming %s: %d listens opened, %d refused as too many by a server "+
				"allowing one stream", x, a, opened, refused)
		}
		select {
		case <-deadline:
			require.True(t, srv.liveAckedNaming(a))
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReview12RefusalDuringReadReplacesTheStreamTwice: 6ddfa6b makes
// refused take a URI it fails out of s.subs.byURI and ask for the stream
// without it at once, even while the URI's first Subscribe still reads.
// But endWaitLocked, run when that read returns (awaitStream finds the
// refusal waiting), still asks for the stream again, though the stream
// the listener opened after the verdict already leaves the URI out: the
// listener stops that fresh, acknowledged stream and opens the very same
// one (same filter) once more. Two relistens for one failed URI: a
// needless replacement (b46b57e: "no needless replacement against a
// server's stream limit"), which a server counting streams refuses as
// too many and which loses the established subscriptions' updates sent
// meanwhile. (Without the held read the two wakes usually coalesce; when
// the listener takes refused's wake before awaitStream's, the same
// double replacement happens.)
func TestReview12RefusalDuringReadReplacesTheStreamTwice(t *testing.T) {
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
	s.HearLists() // the listener's next stream names a, w (still read), and the lists

	// The verdict fails w during its read; refused asks for the stream
	// without w: wait for it, open and acknowledged.
	var fresh *review2Stream
	deadline := time.Now().Add(15 * time.Second)
	for fresh == nil {
		srv.mu.Lock()
		for _, st := range srv.streams {
			st.mu.Lock()
			if st.acked && !st.closed && st.filter.PromptsListChanged && st.names(a) && !st.names(w) {
				fresh = st
			}
			st.mu.Unlock()
		}
		srv.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no stream asks for %s without %s after the refusal (refusals: %d)", a, w, refusals.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	since := srv.count()
	refusedBefore := refusals.Load()

	release() // w's read returns: its Subscribe takes the refusal
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("Subscribe did not return")
	}
	require.Error(t, err)

	// The stream already asks for what is subscribed now: a bounded wait
	// for the event of another listen reaching the server.
	stop := time.After(3 * time.Second)
	for {
		n, r := srv.count()-since, refusals.Load()-refusedBefore
		fresh.mu.Lock()
		closed := fresh.closed
		fresh.mu.Unlock()
		if n > 0 || r > 0 || closed {
			t.Fatalf("after refused had failed %s and the listener had opened the stream without it (acknowledged), "+
				"Subscribe(%s) returning (%v) made the listener replace that stream with the same one: "+
				"%d streams opened since, %d refused, the acknowledged one closed: %v", w, w, err, n, r, closed)
		}
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReview12UnsubscribeOfADroppedURIReplacesTheStream: refused drops
// an established URI (refused alone twice while another was accepted
// alone) and asks for the stream without it; its callers still hold
// their unsubscribe functions. unsubscribe then finds no entry for the
// URI, takes that for the last caller leaving (len of a missing map is
// 0) and asks for the stream again: the listener stops the session's
// acknowledged stream, which never named the URI since the drop, and
// opens the same one once more - once for each caller of the dropped
// URI. The same needless replacement as above (b46b57e: "no needless
// replacement against a server's stream limit"; relistenLocked asks for
// "the URIs subscribed now", unchanged by it), losing the other
// subscriptions' updates meanwhile.
func TestReview12UnsubscribeOfADroppedURIReplacesTheStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	const a, b = "test://a", "test://b"
	srv := newReview3Server(t)
	var gone atomic.Bool // b removed at the server: every stream naming it refused
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if gone.Load() && slices.Contains(f.ResourceSubscriptions, b) {
			return review3Refused
		}
		return nil
	}
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	ub, err := s.Subscribe(ctx, b, func() {})
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, b))
	var st *review2Stream
	srv.mu.Lock()
	for _, c := range srv.streams {
		c.mu.Lock()
		if c.acked && !c.closed && c.names(a) && c.names(b) {
			st = c
		}
		c.mu.Unlock()
	}
	srv.mu.Unlock()
	require.NotNil(t, st)

	gone.Store(true)
	st.end <- "result" // the server ends the stream; the next, naming a and b, is refused: b is dropped
	var fresh *review2Stream
	deadline := time.Now().Add(20 * time.Second)
	for fresh == nil {
		if logs.has("they are dropped") {
			srv.mu.Lock()
			for _, c := range srv.streams {
				c.mu.Lock()
				// the listener's, not a probe: opened after the drop's warning
				if c.acked && !c.closed && slices.Equal(c.filter.ResourceSubscriptions, []string{a}) && c != st {
					fresh = c
				}
				c.mu.Unlock()
			}
			srv.mu.Unlock()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not dropped, or no stream names %s alone after it", b, a)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The probes' streams are closed by now; wait for the listener's one
	// to be the only open stream, so that a probe is not counted below.
	for {
		srv.mu.Lock()
		open := 0
		for _, c := range srv.streams {
			c.mu.Lock()
			if !c.closed {
				open++
			}
			c.mu.Unlock()
		}
		srv.mu.Unlock()
		if open == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("probe streams still open")
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.subs.mu.Lock()
	_, kept := s.subs.byURI[b]
	cur := s.subs.stream
	s.subs.mu.Unlock()
	require.False(t, kept)
	require.Equal(t, []string{a}, cur.filter.ResourceSubscriptions)
	since := srv.count()

	ub() // the caller of the dropped b leaves

	stop := time.After(3 * time.Second)
	for {
		fresh.mu.Lock()
		closed := fresh.closed
		fresh.mu.Unlock()
		if n := srv.count() - since; n > 0 || closed {
			t.Fatalf("unsubscribing from %s, dropped before (not on the stream), made the listener replace the "+
				"acknowledged stream naming %s with the same one: %d streams opened since, the acknowledged one closed: %v",
				b, a, n, closed)
		}
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
