package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// handlesUnder counts this process's open descriptors on paths under dir.
func handlesUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// A workspace's temp-directory handle lives as long as its cache entry: a
// re-prepared workspace closes the old one, and no more are open than
// entries cached.
func TestTempDirHandlesAreReleased(t *testing.T) {
	resetCache(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, err := Prepare(root, "u", "t")
	require.NoError(t, err)
	require.Equal(t, 1, handlesUnder(t, root))
	require.NoError(t, os.RemoveAll(filepath.Join(ws.Dir, ".mcp")))
	_, err = Prepare(root, "u", "t")
	require.NoError(t, err)
	require.Equal(t, 1, handlesUnder(t, root), "the removed directory's handle was closed")

	for i := range wsCacheMax + 100 {
		_, err := Prepare(root, "u", fmt.Sprintf("t%d", i))
		require.NoError(t, err)
	}
	require.LessOrEqual(t, handlesUnder(t, root), wsCacheMax)
}

// resetCache empties the cache of prepared workspaces (closing their
// handles) now and when the test ends: it is the process's.
func resetCache(t *testing.T) {
	reset := func() {
		wsPrepared.mu.Lock()
		defer wsPrepared.mu.Unlock()
		for k, e := range wsPrepared.m {
			e.close()
			delete(wsPrepared.m, k)
		}
	}
	reset()
	t.Cleanup(reset)
}
