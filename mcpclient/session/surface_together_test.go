package session

import (
	"io"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// TestTogetherCountsRefusalsInARow: the rule for URIs refused together
// (refusedTogetherLocked) acts on the second such refusal of the same URIs
// in a row; a refusal between them that does not count (a URI refused
// alone) starts the count again, as the docs say ("twice in a row").
func TestTogetherCountsRefusalsInARow(t *testing.T) {
	const a, m, z = "test://a", "test://m", "test://z"
	s := &Session{server: "srv", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.subs.named = map[string]bool{a: true, z: true} // the last acknowledged stream: [a z]
	uris := []string{a, m, z}
	each := map[string]bool{a: true, m: true, z: true} // each accepted alone
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	require.False(t, s.refusedTogetherLocked(uris, false, each), "the first refusal together")
	require.False(t, s.refusedTogetherLocked(uris, true, map[string]bool{a: true, z: true}), "m refused alone: not together")
	require.False(t, s.refusedTogetherLocked(uris, false, each), "together again, but not twice in a row")
	require.True(t, s.refusedTogetherLocked(uris, false, each), "twice in a row")
}

// TestLeftOutAcknowledgedBeforeIsKeptWithAWarning: an acknowledgement that
// leaves out a URI a stream acknowledged before keeps the subscription
// (the server may have left it out for a moment; refused's rules decide
// on drops), and says so in the log rather than nothing.
func TestLeftOutAcknowledgedBeforeIsKeptWithAWarning(t *testing.T) {
	const a, z = "test://a", "test://z"
	logs := &review2Logs{}
	s := &Session{server: "srv", log: slog.New(logs)}
	s.subs.byURI = map[string]map[*func()]bool{a: {new(func()): true}, z: {new(func()): true}}
	s.subs.named = map[string]bool{a: true, z: true}
	s.subs.stream = &listenStream{key: "k2", filter: mcp.SubscriptionFilter{ResourceSubscriptions: []string{a, z}},
		ended: make(chan struct{})}
	s.acknowledged(mcp.JSONRPCNotification{Notification: mcp.Notification{Params: mcp.NotificationParams{
		Meta:             map[string]any{mcp.MetaKeySubscriptionID: "k2"},
		AdditionalFields: map[string]any{"notifications": map[string]any{"resourceSubscriptions": []any{a}}},
	}}})
	s.subs.mu.Lock()
	_, kept := s.subs.byURI[z]
	named := s.subs.named[z]
	s.subs.mu.Unlock()
	require.True(t, kept, "%s, acknowledged before, is kept", z)
	require.False(t, named)
	require.True(t, logs.has("acknowledged before out of its acknowledgement"), "no warning that the server left %s out", z)
}
