package workspace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkspaceCacheIsBounded pins that the cache of prepared workspaces
// does not grow with every thread ever seen.
func TestWorkspaceCacheIsBounded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range wsCacheMax + 100 {
		_, err := Prepare(root, "u", fmt.Sprintf("t%d", i))
		require.NoError(t, err)
	}
	require.LessOrEqual(t, wsCacheLen(), wsCacheMax)
}

func wsCacheLen() int {
	wsPrepared.mu.Lock()
	defer wsPrepared.mu.Unlock()
	return len(wsPrepared.m)
}
