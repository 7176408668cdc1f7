package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestLivePoller: Temporal lists a stopped worker's poller for minutes
// after its last poll; a cancel or an answer must not be acknowledged on
// its word. A worker counts while it polled within pollerGoneAfter (a
// running one polls again at least every long-poll timeout).
func TestLivePoller(t *testing.T) {
	now := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *taskqueuepb.PollerInfo {
		return &taskqueuepb.PollerInfo{Identity: "w", LastAccessTime: timestamppb.New(now.Add(-ago))}
	}
	require.False(t, livePoller(nil, now), "no poller")
	require.True(t, livePoller([]*taskqueuepb.PollerInfo{at(time.Second)}, now))
	require.True(t, livePoller([]*taskqueuepb.PollerInfo{at(70 * time.Second)}, now), "idle through one long poll")
	require.False(t, livePoller([]*taskqueuepb.PollerInfo{at(pollerGoneAfter)}, now), "gone")
	require.False(t, livePoller([]*taskqueuepb.PollerInfo{at(4 * time.Minute)}, now), "listed, stopped minutes ago")
	require.True(t, livePoller([]*taskqueuepb.PollerInfo{at(4 * time.Minute), at(10 * time.Second)}, now), "another worker polls")
	require.True(t, livePoller([]*taskqueuepb.PollerInfo{{Identity: "w"}}, now), "without a time")
}
