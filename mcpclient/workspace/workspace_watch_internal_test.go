//go:build linux

package workspace

import (
	"fmt"
	"math/rand"
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

	// A file's events update its entry without a walk; nothing changed,
	// nothing is read.
	walks := w.walks
	write("deep/er/c.txt", "rewritten")
	same()
	write("d.txt", "new")
	same()
	require.NoError(t, os.Remove(filepath.Join(dir, "d.txt")))
	same()
	same()
	require.Equal(t, walks, w.walks, "no walk for files' events, nor when nothing changed")
	write("new/dir/e.txt", "x") // a directory: walked
	same()
	require.Greater(t, w.walks, walks)
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
	snap := w.snapshot()
	require.Len(t, snap, 1, "the call that broke the watcher still sees the files")
	require.Equal(t, newestOf(snap), w.newest)
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

// The snapshot kept from events is the walk's after any sequence of
// changes: files and directories created, rewritten, touched, renamed
// within the tree, moved out of it and back in, removed, replaced by one
// another, symbolic links and .mcp directories; checked after each step
// and after several at once (fixed seeds: the same steps every run).
func TestWorkspaceWatchRandomChanges(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		dir, outside := t.TempDir(), t.TempDir()
		w := newWSWatch(dir)
		rng := rand.New(rand.NewSource(seed))
		pick := func(root string, dirs bool) string {
			var all []string
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && p != root && d.IsDir() == dirs {
					all = append(all, p)
				}
				return nil
			})
			if len(all) == 0 {
				return ""
			}
			return all[rng.Intn(len(all))]
		}
		someDir := func() string {
			if d := pick(dir, true); d != "" && rng.Intn(3) > 0 {
				return d
			}
			return dir
		}
		name := func() string { return fmt.Sprintf("n%d", rng.Intn(12)) }
		step := func() {
			switch rng.Intn(12) {
			case 0, 1:
				_ = os.WriteFile(filepath.Join(someDir(), name()+".txt"), []byte(name()), 0o644)
			case 2:
				if f := pick(dir, false); f != "" {
					fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
					if err == nil {
						_, _ = fh.WriteString("more")
						_ = fh.Close()
					}
				}
			case 3:
				if f := pick(dir, false); f != "" {
					at := time.Now().Add(time.Duration(rng.Intn(7200)-3600) * time.Second)
					_ = os.Chtimes(f, at, at)
				}
			case 4:
				if f := pick(dir, false); f != "" {
					_ = os.Remove(f)
				}
			case 5:
				if f := pick(dir, false); f != "" {
					_ = os.Rename(f, filepath.Join(someDir(), name()+".mv"))
				}
			case 6:
				_ = os.MkdirAll(filepath.Join(someDir(), "d"+name()), 0o755)
			case 7:
				if d := pick(dir, true); d != "" {
					_ = os.Rename(d, filepath.Join(dir, "r"+name())) // may fail: into itself
				}
			case 8:
				if d := pick(dir, true); d != "" {
					_ = os.Rename(d, filepath.Join(outside, fmt.Sprintf("o%d", rng.Int())))
				}
			case 9:
				if d := pick(outside, true); d != "" {
					_ = os.Rename(d, filepath.Join(someDir(), "back"+name()))
				} else if d := pick(dir, true); d != "" {
					_ = os.RemoveAll(d)
				}
			case 10:
				_ = os.Symlink(filepath.Join(dir, name()+".txt"), filepath.Join(someDir(), "l"+name()))
			case 11:
				p := filepath.Join(someDir(), wsReservedDir)
				_ = os.MkdirAll(p, 0o755)
				_ = os.WriteFile(filepath.Join(p, "hidden"), []byte("x"), 0o644)
			}
			// Files moved out keep changing outside the tree.
			if f := pick(outside, false); f != "" {
				_ = os.WriteFile(f, []byte("outside"), 0o644)
			}
		}
		for i := 0; i < 150; i++ {
			for range 1 + rng.Intn(3) {
				step()
			}
			want := walkFiles(dir, nil)
			require.Equal(t, want, w.snapshot(), "seed %d, step %d", seed, i)
			cut := time.Now().Add(-time.Duration(rng.Intn(3)) * time.Second).UnixNano()
			require.Equal(t, changedIn(want, cut), w.changed(cut), "seed %d, step %d", seed, i)
		}
		require.False(t, w.broken)
		w.close()
	}
}
