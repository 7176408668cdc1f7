package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/mcpclient/session"
)

// TestStdioAbandonedCallsAreCancelled: a call whose caller stopped waiting
// (its deadline, tool_call_timeout) is cancelled at a stdio server with
// notifications/cancelled, the only way a pipe can say so, on both
// revisions. The demo server (mcp-go's stdio server) runs tool calls on 5
// workers: five abandoned 10-minute calls that kept running would hold
// them all, and the next call would wait for them; cancelled, they free
// the workers at once. Before, nothing was sent and the next call waited.
func TestStdioAbandonedCallsAreCancelled(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			srv := sessStdioServer(t, "demo")
			srv.ProtocolVersion = version
			srv.Type = config.TransportStdio
			s := sessDial(t, srv, session.DialOptions{})

			var wg sync.WaitGroup
			for range 5 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
					defer cancel()
					_, err := s.CallTool(ctx, "slow", map[string]any{"seconds": 600}, nil)
					require.ErrorIs(t, err, context.DeadlineExceeded)
				}()
			}
			wg.Wait()
			// A generous bound: the abandoned calls would hold the
			// workers for 10 minutes.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := s.CallTool(ctx, "echo", map[string]any{"message": "next"}, nil)
			require.NoError(t, err, "the server still runs the abandoned calls")
			require.Equal(t, "next", sessText(res))
		})
	}
}
