package session

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestReview13FailedReadDuringTheBackoffReopensAtOnce: 8ff5b95 makes
// relistenLocked do nothing while the listener's stream "asks for what is
// wanted", but only while that stream has not ended. Between a stream the
// server ended or refused and the listener's retry (its backoff: 1 s, 2 s,
// 4 s ... a minute) s.subs.stream is the ended stream, so every
// relistenLocked with the filter unchanged still wakes the listener: a
// first Subscribe whose resources/read fails (endWaitLocked; the common
// case, SubscribeResource trying each server before the resource's own,
// each answering -32602), or an unsubscribe of a URI a refusal dropped.
// The listener takes the wake as "a new filter" (backoff =
// listenRetryMin) and opens the very stream its backoff was holding back,
// at once. Against a server out of room (mcpflow's 'too many streams,
// retry shortly'), each Subscribe anywhere on the gateway sends it one
// more subscriptions/listen, and the backoff never grows. Rules broken:
// listenLoop's "Reopening a stream the server ended or refused waits
// listenRetryMin, doubling up to listenRetryMax (and back to the start
// after a stream the server acknowledged, when the filter asked for
// changes, or when a retry opens a filter other than the last)" and the
// endpoint reference's "opened again after 1 s, then longer up to a
// minute"; and 8ff5b95's own "asked for a stream only when the filter
// wanted differs" - nothing the server is asked for differs here.
func TestReview13FailedReadDuringTheBackoffReopensAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, x = "test://a", "test://elsewhere"
	srv := newReview3Server(t)
	var outOfRoom atomic.Bool
	var mu sync.Mutex
	var refusedAt []time.Time // each listen refused while out of room
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
		return append([]time.Time(nil), refusedAt...)
	}
	url, _, release := heldRead(t, x, map[string]any{"code": mcp.INVALID_PARAMS, "message": "resource not found: " + x}, srv.serve)
	release() // not held: answered at once, not found
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

	// The server ends the stream and is out of room from then on: the
	// listener asks again after 1 s (refused), 2 s (refused), then 4 s.
	outOfRoom.Store(true)
	st.end <- "result"
	for len(refusals()) < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not ask again")
		case <-time.After(10 * time.Millisecond):
		}
	}
	second := refusals()[1]
	// The second refused stream has ended (refused returned): the listener
	// waits out its backoff, 4 s from the second refusal.
	for {
		s.subs.mu.Lock()
		cur := s.subs.stream
		s.subs.mu.Unlock()
		ended := false
		if cur != nil {
			select {
			case <-cur.ended:
				ended = true
			default:
			}
		}
		if ended {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the refused stream did not end")
		case <-time.After(5 * time.Millisecond):
		}
	}

	// Three Subscribes of another server's resource: not found here. The
	// filter wanted stays [a], as the refused stream asked.
	for range 3 {
		_, err = s.Subscribe(ctx, x, func() {})
		var rpc *mcpflow.RPCError
		require.True(t, errors.As(err, &rpc), "Subscribe(%s): %v", x, err)
		require.Equal(t, mcp.INVALID_PARAMS, rpc.Code)
	}

	// Until 3 s after the second refusal (the backoff is 4 s) the server
	// is to hear no subscriptions/listen: a bounded wait for that event.
	quiet := second.Add(3 * listenRetryMin)
	for time.Now().Before(quiet) {
		var early int
		for _, at := range refusals()[2:] {
			if at.Before(quiet) {
				early++
			}
		}
		if early > 0 {
			t.Fatalf("the listener's backoff after two refusals is %s; %d failed Subscribes of %s (a URI no stream "+
				"named; the filter wanted unchanged, [%s]) made it open the refused stream again %d times "+
				"within %s of the last refusal", 4*listenRetryMin, 3, x, a, early, time.Since(second).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
