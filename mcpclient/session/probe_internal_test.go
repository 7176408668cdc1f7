package session

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProbeRefusedLater: a server that accepted test://bad and test://good
// refuses test://bad later (the resource removed, say) and ends the stream.
// The stream naming both is refused when opened again; which URI is to
// blame is asked of the server one URI at a time, test://bad is dropped,
// and test://good gets a stream again. Before, the same stream was opened
// and refused again and again, and test://good heard nothing more.
func TestProbeRefusedLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const good, bad = "test://good", "test://bad"
	srv, refuseBad := refusing(t, bad)
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	for _, uri := range []string{good, bad} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}
	var st *review2Stream
	for st == nil || !st.names(bad) {
		select {
		case st = <-srv.opened:
		case <-ctx.Done():
			t.Fatal("no stream naming both")
		}
	}
	since := srv.count()
	refuseBad.Store(true)
	st.end <- "abort"
	for kept := true; kept; {
		s.subs.mu.Lock()
		_, kept = s.subs.byURI[bad]
		s.subs.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("%s is still asked for", bad)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// (A probe's stream names good alone too, so good's stream is looked
	// for once bad is dropped, which the probes end with.)
	require.True(t, srv.waitLiveAckedNaming(good, since, 20*time.Second),
		"the server refuses %s now; %s has no stream", bad, good)
}

// TestProbeRefusalNotTheNewSubscribes: test://bad was accepted, the
// server refuses it now, and the next first Subscribe, of a URI it
// accepts, opens a stream naming both: that Subscribe succeeds (its URI
// accepted alone) and test://bad is the one dropped. Before, the new
// Subscribe was blamed (failing with -32602, which reads as an unknown
// resource) and test://bad stayed.
func TestProbeRefusalNotTheNewSubscribes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const fine, bad = "test://fine", "test://bad"
	srv, refuseBad := refusing(t, bad)
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	u, err := s.Subscribe(ctx, bad, func() {})
	require.NoError(t, err)
	defer u()
	refuseBad.Store(true)

	u2, err := s.Subscribe(ctx, fine, func() {})
	require.NoError(t, err, "Subscribe(%s) blamed for the refusal of %s", fine, bad)
	defer u2()
	require.True(t, srv.ackedNaming(fine))
	s.subs.mu.Lock()
	_, kept := s.subs.byURI[bad]
	s.subs.mu.Unlock()
	require.False(t, kept, "%s is still asked for", bad)
}

// refusing is a stand-in 2026 server that refuses every stream naming uri
// once the returned flag is set.
func refusing(t *testing.T, uri string) (*review3Server, *atomic.Bool) {
	srv := newReview3Server(t)
	var on atomic.Bool
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if on.Load() && slices.Contains(f.ResourceSubscriptions, uri) {
			return review3Refused
		}
		return nil
	}
	return srv, &on
}
