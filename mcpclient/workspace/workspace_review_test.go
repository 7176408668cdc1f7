//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// reviewOldIntact is the check before 8b2f1a9: an lstat of the path.
func reviewOldIntact(w *Workspace) bool {
	fi, err := os.Lstat(w.TempDir)
	return err == nil && fi.IsDir() && fi.Mode().Perm() == 0o700
}

// The temp directory itself (not a parent) renamed away and a symbolic
// link to a directory outside put in its place: the lstat saw the link and
// the preparation repaired it; the handle still names the renamed
// directory, linked and 0700, so the cached workspace is handed out with
// TempDir a link outside.
func TestReviewTempDirRenamedThenSymlinked(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	outside := t.TempDir()
	ws, err := Prepare(root, "u", "renamed-symlink")
	require.NoError(t, err)
	require.NoError(t, os.Rename(ws.TempDir, ws.TempDir+".moved"))
	require.NoError(t, os.Symlink(outside, ws.TempDir))
	require.False(t, reviewOldIntact(ws), "the lstat check sees it")

	ws2, err := Prepare(root, "u", "renamed-symlink")
	require.NoError(t, err)
	fi, err := os.Lstat(ws2.TempDir)
	require.NoError(t, err)
	require.True(t, fi.IsDir() && fi.Mode()&os.ModeSymlink == 0, "TempDir handed out is %v (a link to %s), not a private directory", fi.Mode(), outside)
}

// The temp directory renamed away, nothing in its place: TMPDIR names a
// directory that does not exist.
func TestReviewTempDirRenamedAway(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, err := Prepare(root, "u", "renamed-away")
	require.NoError(t, err)
	require.NoError(t, os.Rename(ws.TempDir, filepath.Join(ws.Dir, "stolen")))
	ws2, err := Prepare(root, "u", "renamed-away")
	require.NoError(t, err)
	_, err = os.Lstat(ws2.TempDir)
	require.NoError(t, err, "Prepare returned a workspace whose TempDir is missing")
}

// The temp directory renamed away and replaced by a 0755 directory.
func TestReviewTempDirRenamedReplacedByOpenDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, err := Prepare(root, "u", "renamed-0755")
	require.NoError(t, err)
	require.NoError(t, os.Rename(ws.TempDir, ws.TempDir+".old"))
	require.NoError(t, os.Mkdir(ws.TempDir, 0o755))
	require.NoError(t, os.Chmod(ws.TempDir, 0o755))
	ws2, err := Prepare(root, "u", "renamed-0755")
	require.NoError(t, err)
	fi, err := os.Lstat(ws2.TempDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// A chmod of the directory (same inode) is seen by the fstat.
func TestReviewTempDirChmod(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws, err := Prepare(root, "u", "chmod")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(ws.TempDir, 0o777))
	ws2, err := Prepare(root, "u", "chmod")
	require.NoError(t, err)
	fi, err := os.Lstat(ws2.TempDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// Handles are close-on-exec: a stdio server started meanwhile must not
// inherit them.
func TestReviewHandleCloseOnExec(t *testing.T) {
	resetCache(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	_, err = Prepare(root, "u", "cloexec")
	require.NoError(t, err)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(target, root+string(filepath.Separator)) {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		require.NoError(t, err)
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
				require.NoError(t, err)
				require.NotZero(t, flags&0o2000000, "fd %s on %s lacks O_CLOEXEC (flags %o)", fd.Name(), target, flags)
				n++
			}
		}
	}
	require.Equal(t, 1, n)
}

// Concurrent Prepare of the same and of different threads while the
// directories are removed, under -race: no error, and no more handles
// than entries afterwards.
func TestReviewConcurrentPrepare(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				thread := fmt.Sprintf("t%d", (g*7+i)%5)
				ws, err := Prepare(root, "u", thread)
				if err != nil {
					errs <- err
					return
				}
				if i%17 == 0 {
					_ = os.RemoveAll(filepath.Join(ws.Dir, ".mcp"))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		// a removal racing a preparation may fail it; report but don't fail
		t.Logf("prepare: %v", err)
	}
	n := handlesUnder(t, root)
	require.LessOrEqual(t, n, 5, "handles under root after the storm")
}

// Many threads: each cached entry holds a descriptor (the lstat held
// none) for as long as the entry stays in the cache, past wsRecheckEvery
// until a sweep.
func TestReviewHandlesHeld(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for i := range wsCacheMax {
		_, err := Prepare(root, "u", fmt.Sprintf("h%d", i))
		require.NoError(t, err)
	}
	t.Logf("descriptors held under root after %d threads: %d", wsCacheMax, handlesUnder(t, root))
	// the threads' directories removed (threads deleted): the handles
	// keep the removed directories' inodes until their entries go
	require.NoError(t, os.RemoveAll(filepath.Join(root, "users")))
	n := 0
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasSuffix(target, "(deleted)") && strings.HasPrefix(target, root) {
			n++
		}
	}
	t.Logf("descriptors on deleted directories still held: %d", n)
}
