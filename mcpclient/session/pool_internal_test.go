package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPoolPinLapses pins that a pin not renewed for poolPinTTL lapses (a
// task whose workflow was terminated never unpins), and that pinning again
// renews it.
func TestPoolPinLapses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	p := NewPool(1, nil)
	p.now = func() time.Time { return now }
	key := PoolKey{Server: "demo", Scope: "u:t"}
	pinned := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.pinnedLocked(key)
	}
	p.Pin(key, "task")
	now = now.Add(poolPinTTL - time.Minute)
	require.True(t, pinned())
	p.Pin(key, "task") // a status poll renews it
	now = now.Add(poolPinTTL - time.Minute)
	require.True(t, pinned())
	now = now.Add(time.Minute)
	require.False(t, pinned(), "lapsed")
	require.Empty(t, p.pins)
}
