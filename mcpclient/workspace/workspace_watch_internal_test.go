//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The watcher's snapshot follows every change the plain walk would see
// (files created, rewritten, touched, renamed, removed, in new nested
// directories), and reads no directory when nothing changed.
func TestWorkspaceWatchFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	w := newWSWatch(dir)
	defer w.close()
	require.False(t, w.broken)
	same := func() {
		t.Helper()
		require.Equal(t, walkFiles(dir, nil), w.snapshot())
	}
	same()
	first := w.snapshot()
	require.Empty(t, first)

	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	write("a.txt", "1")
	same()
	write("deep/er/b.txt", "2") // new directories, then a file in them
	same()
	write("deep/er/c.txt", "3") // a file in a directory the walk just found
	same()
	write("a.txt", "longer") // rewritten in place
	same()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "a.txt"), old, old)) // touched
	same()
	require.NoError(t, os.Rename(filepath.Join(dir, "deep/er/b.txt"), filepath.Join(dir, "b2.txt")))
	same()
	require.NoError(t, os.Remove(filepath.Join(dir, "b2.txt")))
	same()
	write(".mcp/tmp/x", "skipped") // the reserved directory stays out
	same()

	// Nothing changed: the cached snapshot (the same map) comes back.
	s1 := w.snapshot()
	s2 := w.snapshot()
	require.Equal(t, reflectPointer(s1), reflectPointer(s2), "no walk when nothing changed")
}

// A closed watcher walks every time.
func TestWorkspaceWatchClosed(t *testing.T) {
	dir := t.TempDir()
	w := newWSWatch(dir)
	w.close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	require.Len(t, w.snapshot(), 1)
}

// A watcher that breaks on a call (its descriptor unreadable, or out of
// watches during the walk) answers that call with the walk all the same,
// and walks every time after.
func TestWorkspaceWatchBreaksOnACall(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	w := newWSWatch(dir)
	require.False(t, w.broken)
	require.NoError(t, unix.Close(w.fd))
	w.fd = -1 // reads fail with EBADF
	snap, newest := w.snapshotNewest()
	require.Len(t, snap, 1, "the call that broke the watcher still sees the files")
	require.Equal(t, newestOf(snap), newest)
	require.True(t, w.broken)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte("y"), 0o644))
	require.Len(t, w.snapshot(), 2)
}

// The cache holds at most wsWatchMax watchers and closes the least recently
// used one.
func TestWorkspaceWatchCacheBound(t *testing.T) {
	c := &wsWatchCache{m: map[string]*wsWatchEntry{}}
	base := t.TempDir()
	first := c.get(filepath.Join(base, "first"))
	for i := 0; i < wsWatchMax; i++ {
		c.get(filepath.Join(base, fmt.Sprint(i)))
	}
	require.Len(t, c.m, wsWatchMax)
	require.NotContains(t, c.m, filepath.Join(base, "first"))
	first.mu.Lock()
	require.True(t, first.broken, "the evicted watcher is closed")
	require.Equal(t, -1, first.fd)
	first.mu.Unlock()
	for _, e := range c.m {
		e.w.close()
	}
}

func reflectPointer(m FileSnapshot) string { return fmt.Sprintf("%p", m) }
