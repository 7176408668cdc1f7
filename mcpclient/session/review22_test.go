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

// TestReview22SlowProbesHandAnotherURIsRefusal: 4f5a21d keeps the
// stream's refusal from a URI accepted alone, but still hands it to every
// URI the server did not answer about alone (refused's "refused together"
// case: no URI refused alone, !once). test://a is subscribed; the server
// then refuses any stream naming a with others (-32602 'subscribing to
// "test://a": resource removed', as mcp-go's server names the URI it
// fails) and, an upstream slow to acknowledge a lone URI (as an mcpflow
// upstream that subscribes at its own upstream first), answers no stream
// naming one URI alone within subsAckWait. Subscribe(test://w) has the
// listener open [a w], refused; a's probe and w's probe both go
// unanswered; verdict[w] is a's refusal, and Subscribe(w) fails with it:
// w's caller gets a's URI and the server's answer about it, and reads
// -32602 as w not found. The server never refused w (4067fd5 and 4f5a21d
// name this outcome a defect for an accepted w;
// TestReview5WaitingSubscribeGetsAnotherURIsRefusalWhenItsProbeIsSlow for a
// slow w whose stream-mate was refused alone). Not new in 4f5a21d.
func TestReview22SlowProbesHandAnotherURIsRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	const aRefused = `subscribing to "test://a": resource removed`
	srv := newReview3Server(t)
	var removed atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if removed.Load() && slices.Contains(f.ResourceSubscriptions, a) && len(f.ResourceSubscriptions) > 1 {
			return map[string]any{"code": mcp.INVALID_PARAMS, "message": aRefused}
		}
		return nil
	}
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return removed.Load() && len(f.ResourceSubscriptions) == 1, nil // one URI alone: no answer in time
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	removed.Store(true)

	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
	}
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		require.NotEqual(t, aRefused, rpc.Message,
			"Subscribe(%s) failed with the server's refusal of %s (code %d), which reads as %s not found; the server "+
				"never refused %s (its probe went unanswered, as did %s's)", w, a, rpc.Code, w, w, a)
	}
}

// TestReview22AcceptedAloneWaitsThroughEveryRetry: 4f5a21d leaves a URI
// the server accepted alone, when no URI was refused alone, waiting "for
// the listener's next stream". Nothing was dropped or failed, so that next
// stream is the same filter, refused again for the same reason; w is
// waiting as that refusal comes, so refused judges it again (judging, no
// subsWaitMax bound) and leaves it waiting again (again, judged = now), and
// so on while the listener's backoff (1 s, 2 s, 4 s) is shorter than
// subsAckWait. Here the server takes at most one resource per stream
// (-32002 'at most one resource per stream' for more, each alone
// acknowledged at once): test://a is subscribed; Subscribe(test://w) has
// the listener open [a w], refused; a and w are each accepted alone.
// Subscribe(w) returns only after the server refused [a w] four times,
// about 12 s (32 s when a lone stream is slow to acknowledge, as in
// TestReview21SubscribeAcceptedAloneGetsAnotherURIsRefusal), and then
// fails anyway, with mcpflow's "refused ... acknowledged none since"
// instead of the server's reason. Meanwhile the established subscription
// to a (another caller's) has no stream at all and its updates are lost,
// and every other Subscribe and unsubscribe of the session waits on
// s.subs.req (unsubscribing a, which would let [w] through, included). At
// 4067fd5 Subscribe(w) failed at once with the server's -32002 and [a]
// was asked for again right away.
func TestReview22AcceptedAloneWaitsThroughEveryRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newReview3Server(t)
	var limit atomic.Bool
	var refusals atomic.Int32
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if limit.Load() && len(f.ResourceSubscriptions) > 1 {
			refusals.Add(1)
			return map[string]any{"code": -32002, "message": "at most one resource per stream"}
		}
		return nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	limit.Store(true)

	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
	}
	n := refusals.Load()
	require.LessOrEqual(t, n, int32(2),
		"Subscribe(%s) (accepted alone) returned only after the server refused [%s %s] %d times, for the same reason "+
			"each time, the established subscription to %s without a stream all along (returned: %v)", w, a, w, n, a, err)
}
