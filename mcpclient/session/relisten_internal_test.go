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
// waiting for the first, and an update of the subscribed resource reaches
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
		s.subs.mu.Lock()
		s.subs.byURI = map[string]map[*func()]bool{uri: {&cb: true}}
		s.subs.lists = false
		s.relistenLocked() // a first Subscribe's stream: it waits for acked
		awaited := s.subs.acked
		s.subs.lists = true
		s.relistenLocked() // HearLists meanwhile
		latest := s.subs.acked
		s.subs.mu.Unlock()
		require.NotNil(t, awaited)
		require.NotNil(t, latest)

		select {
		case <-latest:
		case <-ctx.Done():
			t.Fatal("the server acknowledged no subscriptions/listen stream")
		}
		select {
		case <-awaited:
		default:
			t.Fatal("the ack a Subscribe awaited was dropped when the stream was asked for again")
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
