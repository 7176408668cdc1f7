package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestReview7WaitingSubscribeAcceptedInReprobeFails: test://a is
// established on an upstream allowing the user one stream (slotServer);
// Subscribe(test://w) has the listener open {a, w}, which the server
// refuses as 'too many streams' (another client of the user holds the
// slot a moment). probeRefused accepts a alone; w's probe is refused for
// the slot of a's probe, not yet given back; 01d73c5's re-probe of w, a
// second later, is accepted. Every URI was accepted alone in the end and
// w was refused alone only once, for a slot: refused still fails the
// waiting Subscribe(w), with the stream's 'too many streams' (the
// "refused together" case: len(alone) == 0 once the re-probe deleted w's
// refusal), instead of leaving it to the listener, whose next {a, w} the
// server acknowledges.
func TestReview7WaitingSubscribeAcceptedInReprobeFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	const a, w = "test://a", "test://w"
	srv := newSlotServer(t)
	logs := &review2Logs{}
	s := dialReview2(t, ctx, srv.URL, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a))
	srv.waitOneSlot(ctx, t) // the earlier streams' slots are given back before the limit applies
	srv.mu.Lock()
	srv.limit, srv.full = 1, 1 // one stream per user; the next listen refused as too many
	srv.mu.Unlock()

	start := time.Now()
	uw, err := s.Subscribe(ctx, w, func() {})
	if err == nil {
		defer uw()
	}
	srv.mu.Lock()
	refusedN := srv.refused
	srv.mu.Unlock()
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		t.Fatalf("Subscribe(%s) failed after %v with the stream's refusal (code %d %q), %d listens refused as too many; "+
			"%s's probe was refused for the slot of a's probe and its re-probe accepted, a was accepted alone",
			w, time.Since(start).Round(100*time.Millisecond), rpc.Code, rpc.Message, refusedN, w)
	}
	require.NoError(t, err)
	require.True(t, srv.waitLiveAckedNamingAll(0, 10*time.Second, a, w))
}
