package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow"
)

// TestFirstSubscribeRunningOutDuringTheBackoff: a first Subscribe whose
// wait runs out while the listener waits out its backoff (no stream naming
// the URI went out since the wait began) fails: with the server's refusal
// of the last stream when it refused it (its code tells the caller when to
// try again), else with an error saying mcpflow asks again later; while
// the stream naming it is open, the server is slow to acknowledge it, and
// the wait running out is a success (with a warning). The
// state is the one TestReview16RetriedSubscribeDuringTheBackoffSucceedsUnasked
// reaches only when a retried Subscribe wins a race with the listener.
func TestFirstSubscribeRunningOutDuringTheBackoff(t *testing.T) {
	const uri = "test://b"
	refusal := &mcpflow.RPCError{Code: -32002, Message: "too many streams open for this user: retry shortly"}
	for _, tc := range []struct {
		name    string
		open    bool // the stream naming uri is open, not acknowledged yet
		refusal *mcpflow.RPCError
	}{{"refused", false, refusal}, {"ended", false, nil}, {"open", true, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ended := make(chan struct{})
			if !tc.open {
				close(ended)
			}
			s := &Session{server: "srv", log: slog.New(slog.NewTextHandler(io.Discard, nil)), done: make(chan struct{})}
			s.subs.byURI = map[string]map[*func()]bool{uri: {new(func()): true}}
			s.subs.stream = &listenStream{filter: mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}},
				over: !tc.open, ended: ended}
			if tc.refusal != nil {
				s.subs.stream.verdict = map[string]error{uri: tc.refusal}
			}
			s.subs.retrying = !tc.open
			s.subs.mu.Lock()
			w := s.waitLocked(uri)
			s.subs.mu.Unlock()

			err := s.awaitStream(context.Background(), uri, w)
			if tc.open {
				require.NoError(t, err, "a server slow to acknowledge the open stream naming %s", uri)
				return
			}
			require.Error(t, err, "the wait ran out with no stream naming %s sent: not a success", uri)
			var rpc *mcpflow.RPCError
			if tc.refusal != nil {
				require.True(t, errors.As(err, &rpc), "%v", err)
				require.Equal(t, refusal, rpc)
			} else {
				require.False(t, errors.As(err, &rpc), "%v", err)
				require.ErrorContains(t, err, "ended the subscriptions/listen stream")
				require.ErrorContains(t, err, "try again shortly")
			}
			s.subs.mu.Lock()
			defer s.subs.mu.Unlock()
			require.NotContains(t, s.subs.byURI, uri, "a failed first Subscribe unsubscribes its URI")
			require.NotContains(t, s.subs.waiting, uri)
		})
	}
}
