//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestWorkspaceWatchDirectoryChurn: directories created and removed while
// the watcher walks (a build's or git's temporary directories) vanish
// between the walk listing them and the watch on them (ENOENT). That is
// not a broken watcher: the removal is an event on the parent, which is
// watched. The watcher stays whole (no walk on every call from then on)
// and its snapshot equals a fresh walk once the churn stops.
func TestWorkspaceWatchDirectoryChurn(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "src", fmt.Sprint(i)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "src", fmt.Sprint(i), "f.go"), []byte("x"), 0o644))
	}
	w := newWSWatch(dir)
	defer w.close()
	w.snapshot()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, "tmp", fmt.Sprint(i%4))
			_ = os.MkdirAll(filepath.Join(tmp, "a", "b"), 0o755)
			_ = os.RemoveAll(tmp)
		}
	}()
	for range 5000 {
		w.snapshot()
	}
	close(stop)
	wg.Wait()

	w.mu.Lock()
	broken := w.broken
	w.mu.Unlock()
	require.False(t, broken, "directories removed during a walk broke the watcher")
	require.Equal(t, walkFiles(dir, nil), w.snapshot())
}

// TestWorkspaceWatchUnreadableDirectory: a directory the process may not
// read cannot be watched (EACCES) nor walked; that is not a broken
// watcher. Its files appear once it is made readable (an event on its
// parent).
func TestWorkspaceWatchUnreadableDirectory(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	require.NoError(t, os.MkdirAll(locked, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(locked, "f"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(locked, 0))
	defer func() { _ = os.Chmod(locked, 0o755) }()

	var broken bool
	var whileLocked, walkLocked, opened, walkOpened FileSnapshot
	var err error
	withoutDACOverride(t, func() {
		w := newWSWatch(dir)
		defer w.close()
		whileLocked, walkLocked = w.snapshot(), walkFiles(dir, nil)
		w.mu.Lock()
		broken = w.broken
		w.mu.Unlock()
		if err = os.Chmod(locked, 0o755); err != nil {
			return
		}
		opened, walkOpened = w.snapshot(), walkFiles(dir, nil)
	})
	require.NoError(t, err)
	require.False(t, broken, "an unreadable directory broke the watcher")
	require.Len(t, walkLocked, 1, "the walk cannot read the locked directory")
	require.Equal(t, walkLocked, whileLocked)
	require.Len(t, walkOpened, 2)
	require.Equal(t, walkOpened, opened)
}

// withoutDACOverride runs fn on a thread of its own that file permissions
// apply to: when the tests run as root, without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH (the thread exits after fn, its capabilities with
// it). The test is skipped when they cannot be dropped.
func withoutDACOverride(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with its lowered capabilities
		if os.Geteuid() == 0 {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&hdr, &data[0]); err != nil {
				done <- err
				return
			}
			data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
			if err := unix.Capset(&hdr, &data[0]); err != nil {
				done <- err
				return
			}
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Skipf("cannot drop the capabilities that bypass file permissions: %v", err)
	}
}

// TestWorkspaceWatchNotThroughALink: a directory the walk listed that is a
// symbolic link by the time it is watched (swapped in meanwhile) is not
// watched: the watch would follow it out of the tree, and events from
// there would read as the tree's. The swap is an event on its parent, so
// nothing is lost; the watcher is not broken either.
func TestWorkspaceWatchNotThroughALink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "swapped")))
	w := newWSWatch(dir)
	defer w.close()
	w.snapshot()
	w.mu.Lock()
	watched := w.watchLocked(filepath.Join(dir, "swapped"))
	broken := w.broken
	w.mu.Unlock()
	require.False(t, watched, "a symbolic link to a directory outside the tree was watched")
	require.False(t, broken)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644))
	require.Equal(t, walkFiles(dir, nil), w.snapshot())
}
