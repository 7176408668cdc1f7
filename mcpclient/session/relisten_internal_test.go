package session

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpflow/mcpflow/config"
	"github.com/mcpflow/mcpflow/internal/testsupport/testenv"
)

// TestRelistenInQuickSuccession: the subscriptions/listen stream asked
// for twice in quick succession (a first Subscribe's, then HearLists'
// before the server acknowledged the first) leaves one stream open that
// the server acknowledges, that acknowledgement releases the Subscribe
// waiting for its URI, and an update of the subscribed resource reaches
// its subscriber. Two defects before: the two Listen calls overlapped and
// could cancel each other, leaving no stream at all, and the first's ack
// channel was replaced and never closed (the Subscribe waited subsAckWait
// and logged a warning). The server is the conformance fixture (the
// TypeScript SDK's, 2026-07-28 over streamable HTTP).
func TestRelistenInQuickSuccession(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Dial(ctx, &config.Server{Name: "fixture", Enabled: true, Type: config.TransportHTTP,
		URL: testenv.StartConformanceFixture(t), ProtocolVersion: "2026-07-28"}, DialOptions{})
	require.NoError(t, err)
	defer s.Close()
	require.True(t, s.Modern())

	const uri = "test://watched-resource"
	updated := make(chan struct{}, 16)
	cb := func() { updated <- struct{}{} }
	for range 3 {
		// From no stream at all (the listener stops the last one), as a
		// session whose first Subscribe this is.
		s.subs.mu.Lock()
		s.subs.byURI, s.subs.lists = nil, false
		s.relistenLocked()
		st := s.subs.stream
		s.subs.mu.Unlock()
		if st != nil {
			select {
			case <-st.ended:
			case <-ctx.Done():
				t.Fatal("the listener did not stop its stream")
			}
		}
		acked := make(chan error, 1)
		s.subs.mu.Lock()
		s.subs.byURI = map[string]map[*func()]bool{uri: {&cb: true}}
		s.subs.waiting = map[string]*subWait{uri: {answer: acked}}
		s.subs.lists = false
		s.relistenLocked() // a first Subscribe's stream: it waits for acked
		s.subs.lists = true
		s.relistenLocked() // HearLists meanwhile
		s.subs.mu.Unlock()
		select {
		case err := <-acked:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("the server acknowledged no subscriptions/listen stream naming the URI")
		}
	}
	_, err = s.CallTool(ctx, "test_trigger_resource_update", map[string]any{}, nil)
	require.NoError(t, err)
	select {
	case <-updated:
	case <-ctx.Done():
		t.Fatal("the subscriber heard no update")
	}
}
