package session

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeftOutAfterTheWaitIsDropped: a server that acknowledges the stream
// naming m only after m's wait ran out (Subscribe(m) succeeded, with the
// warning) and leaves m out of that acknowledgement has said it will send
// no update of m. The subscription is dropped then, with a warning, rather
// than kept in every later stream the server leaves it out of, with its
// caller told nothing in the log either.
func TestLeftOutAfterTheWaitIsDropped(t *testing.T) {
	ctx := t.Context()
	const a, m = "test://a", "test://m"
	srv := newReview2Server(t)
	var holding atomic.Bool
	gate := make(chan struct{})
	srv.holdAck = func(f listenFilter2) (bool, <-chan struct{}) {
		return holding.Load(), gate // the stream after Subscribe(m): acknowledged late
	}
	// m cannot be subscribed: the stream is served (and acknowledged)
	// for the other URIs it names.
	url := review28Server(t, srv, func(uris []string) []string {
		return slices.DeleteFunc(slices.Clone(uris), func(u string) bool { return u == m })
	})
	logs := &review2Logs{}
	s := dialReview2(t, ctx, url, logs)
	defer s.Close()
	ua, err := s.Subscribe(ctx, a, func() {})
	require.NoError(t, err)
	defer ua()

	holding.Store(true)
	um, err := s.Subscribe(ctx, m, func() {})
	require.NoError(t, err, "Subscribe(%s): its wait runs out while the stream naming it is open (success)", m)
	defer um()
	require.True(t, logs.has("did not acknowledge"))
	close(gate) // the acknowledgement, leaving m out

	deadline := time.Now().Add(10 * time.Second)
	for {
		s.subs.mu.Lock()
		kept := len(s.subs.byURI[m]) > 0
		s.subs.mu.Unlock()
		if !kept {
			break
		}
		require.True(t, time.Now().Before(deadline),
			"10 s after the server acknowledged the stream naming %s leaving it out, mcpflow still keeps the "+
				"subscription (and names it in every stream)", m)
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, logs.has("left resource subscriptions out"), "no warning that the subscription is dropped")
	s.subs.mu.Lock()
	_, aKept := s.subs.byURI[a]
	s.subs.mu.Unlock()
	require.True(t, aKept, "%s, acknowledged, is kept", a)
}
