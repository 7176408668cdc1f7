package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestReview23RefusedTogetherHandsAnotherURIsRefusal: 2a70de7 gives every
// waiting URI the stream's refusal when no URI was refused alone and each
// was accepted alone ("a server that refuses them together"), whatever
// URI that refusal is about. mcp-go's server refuses a stream in one way
// only: -32602 'subscribing to "<uri>": <err>' for the first URI its
// session's SubscribeToResourceErr fails, in the filter's order. A server
// out of room (a session type capping the resources of one stream, here
// at two) thus names whichever URI comes past the cap in sorted order, not
// the one just added. test://a and test://z are subscribed ([a z],
// acknowledged); Subscribe(test://m) has the listener open [a m z], which
// the server refuses with -32602 'subscribing to "test://z": at most 2
// resources per stream'; a, m and z are each accepted alone, and m's
// caller gets z's refusal: z's URI, and code -32602, which
// mcpclient.SubscribeResource reads as m not found at this server (it asks
// the next server, or answers the resource unknown), though m exists and
// the server refused nothing about it. (As at 5adc957, and what 4067fd5
// and 4f5a21d name a defect for another URI's -32602.)
func TestReview23RefusedTogetherHandsAnotherURIsRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const a, m, z = "test://a", "test://m", "test://z"
	srv := newReview3Server(t)
	srv.refusal = func(_ context.Context, f listenFilter2) map[string]any {
		if len(f.ResourceSubscriptions) > 2 { // as mcp-go: the first URI it fails, in order
			return map[string]any{"code": mcp.INVALID_PARAMS,
				"message": fmt.Sprintf("subscribing to %q: at most 2 resources per stream", f.ResourceSubscriptions[2])}
		}
		return nil
	}
	s := dialReview2(t, ctx, srv.URL, nil)
	defer s.Close()
	for _, uri := range []string{a, z} {
		u, err := s.Subscribe(ctx, uri, func() {})
		require.NoError(t, err)
		defer u()
	}

	um, err := s.Subscribe(ctx, m, func() {})
	if err == nil {
		defer um()
	}
	require.Error(t, err, "the server cannot take a third resource on the stream")
	var rpc *mcpflow.RPCError
	if errors.As(err, &rpc) {
		require.NotContains(t, rpc.Message, z,
			"Subscribe(%s) failed with the server's refusal naming %s (code %d: read as %s not found), though %s "+
				"exists and was accepted alone (%v)", m, z, rpc.Code, m, m, srv.ackedNaming(m))
	}
}
